// anywidget entry point of ppl-widget's front end.
import { PplView } from "./view.js";

export default {
  render({ model, el }) {
    const view = new PplView(model, el);
    return () => view.destroy();
  },
};
