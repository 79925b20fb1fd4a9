// Tiny DOM builder.  Data only ever goes in through textContent,
// createTextNode and setAttribute: never innerHTML.

/**
 * h("div", {class: "a b", text: "hi", attrs: {role: "note"}}, child, "text", ...)
 * Children may be nodes, strings (text nodes) or null/false (skipped).
 */
export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  if (props.class) el.className = props.class;
  if (props.text != null) el.textContent = String(props.text);
  if (props.attrs) {
    for (const [k, v] of Object.entries(props.attrs)) {
      if (v === false || v == null) continue;
      el.setAttribute(k, v === true ? "" : String(v));
    }
  }
  if (props.title != null) el.title = String(props.title);
  for (const c of children) {
    if (c == null || c === false) continue;
    el.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
  }
  return el;
}

/** Replace an element's children by text. */
export function setText(el, s) {
  const v = s == null ? "" : String(s);
  if (el.textContent !== v) el.textContent = v;
}

export function show(el, on) {
  el.hidden = !on;
}
