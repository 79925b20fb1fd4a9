// The smallest DOM the panels' tests need (node has none): elements that record their
// children, attributes, classes and state, installed as globalThis.document.

export function fakeElement(tag) {
  const el = {
    tag,
    children: [],
    attributes: {},
    style: {},
    className: "",
    textContent: "",
    disabled: false,
    hidden: false,
    classList: {
      set: new Set(),
      toggle(c, on) {
        if (on) this.set.add(c);
        else this.set.delete(c);
      },
      remove(c) {
        this.set.delete(c);
      },
      add(c) {
        this.set.add(c);
      },
      contains(c) {
        return this.set.has(c);
      },
    },
    appendChild(c) {
      el.children.push(c);
      return c;
    },
    append(...cs) {
      el.children.push(...cs);
    },
    replaceChildren(...cs) {
      el.children = cs;
    },
    setAttribute(k, v) {
      el.attributes[k] = String(v);
    },
    removeAttribute(k) {
      delete el.attributes[k];
    },
    addEventListener() {},
    get firstChild() {
      return el.children[0] ?? null;
    },
    get value() {
      return el._value ?? el.attributes.value; // an <option>'s value is its attribute
    },
    set value(v) {
      el._value = v;
    },
    get options() {
      return el.children; // a <select>'s options: its children here
    },
  };
  return el;
}
export function installFakeDocument() {
  globalThis.document = {
    createElement: fakeElement,
    createTextNode: (text) => ({ textContent: text }),
  };
}
