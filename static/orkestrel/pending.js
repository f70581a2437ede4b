// @ts-check
// Messages sent while an answer runs: the server holds them for the next run (merged), and
// every tab lists them here; "Take back to edit" asks for them back into the composer.

import { el } from "./dom.js";

export class PendingBox {
  /**
   * @param {HTMLElement} box the `#pending-box` element
   * @param {(frame: object) => boolean} send
   * @param {(message: string, kind?: string) => void} notify
   */
  constructor(box, send, notify) {
    this.box = box;
    box.querySelector("#pending-edit").addEventListener("click", () => {
      if (!send({ type: "pending_pop" })) notify("Not connected right now; reconnecting…", "warning");
    });
  }

  /** List `messages` (each `{content, images_count}`); none hides the box. */
  show(messages) {
    const items = messages.map((message) => el("li", { text: message.content || `${message.images_count} image(s)` }));
    this.box.querySelector(".pending-list").replaceChildren(...items);
    this.box.hidden = messages.length === 0;
  }
}
