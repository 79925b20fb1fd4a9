// anywidget entry point of ppl-widget's minimal-pairs view.
import { PairsView } from "./view.js";

export default {
  render({ model, el }) {
    const view = new PairsView(model, el);
    return () => view.destroy();
  },
};
