// anywidget entry point of ppl-widget's comparison view.
import { CompareView } from "./view.js";

export default {
  render({ model, el }) {
    const view = new CompareView(model, el);
    return () => view.destroy();
  },
};
