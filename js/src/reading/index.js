// anywidget entry point of ppl-widget's reading view.
import { ReadingView } from "./view.js";

export default {
  render({ model, el }) {
    const view = new ReadingView(model, el);
    return () => view.destroy();
  },
};
