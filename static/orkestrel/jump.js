// @ts-check
// "Jump to latest": shown while the newest message is out of view, it sits just above the
// composer (inside its sticky dock, so the composer never covers it) and scrolls back down.

/** @typedef {import("./transcript.js").Transcript} Transcript */

export class JumpToLatest {
  /**
   * @param {HTMLButtonElement} button
   * @param {Transcript} transcript
   */
  constructor(button, transcript) {
    this.button = button;
    this.transcript = transcript;
    button.addEventListener("click", () => this.jump());
    window.addEventListener("scroll", () => this.update(), { passive: true });
  }

  update() {
    this.button.hidden = this.transcript.nearBottom();
  }

  jump() {
    this.transcript.scrollToEnd();
    this.button.hidden = true;
  }
}
