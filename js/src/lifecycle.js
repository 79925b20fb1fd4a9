// What every view does over its life: listen to its model (and let go on destroy), and
// redraw at most once per animation frame however many updates arrive.

/** Model listeners that are all removed at once by offAll(). */
export class ModelListeners {
  constructor(model) {
    this.model = model;
    this.list = [];
  }

  on(name, fn) {
    this.model.on(name, fn);
    this.list.push([name, fn]);
  }

  offAll() {
    for (const [name, fn] of this.list) this.model.off(name, fn);
    this.list = [];
  }
}

// Outside a browser (the node tests) there are no animation frames: a timeout stands in.
const nextFrame = (fn) => (typeof requestAnimationFrame === "function" ? requestAnimationFrame(fn) : setTimeout(fn, 0));
const cancelFrame = (id) => (typeof cancelAnimationFrame === "function" ? cancelAnimationFrame(id) : clearTimeout(id));

/** Runs fn once in the next frame, however often schedule() is called before it. */
export class FrameScheduler {
  constructor(fn) {
    this.fn = fn;
    this.id = 0;
  }

  schedule() {
    if (this.id) return;
    this.id = nextFrame(() => {
      this.id = 0;
      this.fn();
    });
  }

  cancel() {
    if (this.id) cancelFrame(this.id);
    this.id = 0;
  }
}

export { nextFrame };
