// @ts-check
// The chat page's workspace panel: list the conversation's files, show one, upload one.
// Uploads are ordinary multipart POSTs (with the CSRF token) to the workspaces views; the form
// still works without JavaScript, this only keeps the page in place. Below the two-column
// width the panel is a drawer the header's Files button opens (Esc or Close shuts it).

import { el } from "./dom.js";

function formatSize(bytes) {
  if (bytes >= 1024 * 1024) return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
  if (bytes >= 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${bytes} bytes`;
}

export class WorkspacePanel {
  /**
   * @param {HTMLElement} root the `#chat` element (carries the URLs as data attributes)
   * @param {(message: string, kind?: string) => void} notify shows a dismissible notice
   */
  constructor(root, notify) {
    this.urls = {
      files: root.dataset.filesUrl,
      file: root.dataset.fileUrl,
      image: root.dataset.imageUrl,
    };
    this.notify = notify;
    this.list = document.getElementById("workspace-files");
    this.viewer = document.getElementById("file-viewer");
    this.viewerName = document.getElementById("file-viewer-name");
    this.viewerText = document.getElementById("file-viewer-text");
    this.viewerImage = /** @type {HTMLImageElement} */ (document.getElementById("file-viewer-image"));
    this.form = /** @type {HTMLFormElement} */ (document.getElementById("upload-form"));
    this.input = /** @type {HTMLInputElement} */ (document.getElementById("upload-input"));
    this.status = document.getElementById("upload-status");
    this.refreshing = null;
    this.again = false;

    this.list.addEventListener("click", (event) => {
      const button = /** @type {HTMLElement | null} */ (/** @type {Element} */ (event.target).closest("button.file-button"));
      if (button) this.open(button.dataset.path, button.dataset.kind);
    });
    this.drawer(root);
    document.getElementById("file-viewer-close").addEventListener("click", () => this.close());
    // With JavaScript, choosing a file uploads it; the submit button is for no-JS pages.
    this.form.classList.add("js-upload");
    this.form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.upload();
    });
    this.input.addEventListener("change", () => {
      if (this.input.files && this.input.files.length) this.upload();
    });
  }

  /** At phone width the panel is a drawer: the header's Files button opens it. */
  drawer(root) {
    const panel = /** @type {HTMLElement} */ (root.querySelector(".workspace"));
    const toggle = /** @type {HTMLButtonElement | null} */ (root.querySelector("[data-testid=workspace-toggle]"));
    const close = /** @type {HTMLButtonElement | null} */ (panel.querySelector("[data-testid=workspace-close]"));
    if (!toggle || !close) return;
    this.panel = panel;
    this.toggle = toggle;
    panel.classList.add("is-drawer");
    toggle.hidden = false;
    close.hidden = false;
    toggle.addEventListener("click", () => this.showDrawer(!panel.classList.contains("is-open")));
    close.addEventListener("click", () => this.showDrawer(false));
    panel.addEventListener("keydown", (event) => {
      if (event.key === "Escape" && panel.classList.contains("is-open")) {
        event.preventDefault();
        this.showDrawer(false);
      }
    });
  }

  /** Open (and focus) or close the drawer; closing gives the focus back to its button. */
  showDrawer(open) {
    this.panel.classList.toggle("is-open", open);
    this.toggle.setAttribute("aria-expanded", String(open));
    if (open) /** @type {HTMLElement} */ (this.panel.querySelector("[data-testid=workspace-close]")).focus();
    else this.toggle.focus();
  }

  /** Reload the file list (coalesced: one request in flight, one queued at most). */
  refresh() {
    if (this.refreshing) {
      this.again = true;
      return this.refreshing;
    }
    this.refreshing = this._load().finally(() => {
      this.refreshing = null;
      if (this.again) {
        this.again = false;
        this.refresh();
      }
    });
    return this.refreshing;
  }

  async _load() {
    let data;
    try {
      const response = await fetch(this.urls.files, {
        headers: { Accept: "application/json" },
        credentials: "same-origin",
      });
      if (!response.ok || !(response.headers.get("content-type") || "").includes("json")) return;
      data = await response.json();
    } catch {
      return; // offline: the next refresh (reconnect, tool frame, upload) catches up
    }
    this.render(data.files || []);
  }

  render(files) {
    const items = files.map((file) =>
      el(
        "li",
        { className: "file-item" },
        el("button", {
          type: "button",
          className: "file-button",
          "data-path": file.path,
          "data-kind": file.kind,
          text: file.path,
        }),
        " ",
        el("span", { className: "file-meta", text: formatSize(file.size) }),
      ),
    );
    if (!items.length) items.push(el("li", { className: "empty", text: "No files yet." }));
    this.list.replaceChildren(...items);
  }

  async open(path, kind) {
    this.viewer.hidden = false;
    this.viewerName.textContent = path;
    this.viewerText.hidden = true;
    this.viewerImage.hidden = true;
    if (kind === "image") {
      const query = new URLSearchParams({ path, v: String(Date.now()) });
      this.viewerImage.src = `${this.urls.image}?${query}`;
      this.viewerImage.alt = path;
      this.viewerImage.hidden = false;
      return;
    }
    try {
      const response = await fetch(`${this.urls.file}?${new URLSearchParams({ path })}`, {
        headers: { Accept: "application/json" },
        credentials: "same-origin",
      });
      if (!response.ok) throw new Error(`The file could not be read (${response.status}).`);
      const data = await response.json();
      this.viewerText.textContent = data.text ?? "";
      this.viewerText.hidden = false;
    } catch (error) {
      this.viewerText.textContent = error.message || "The file could not be read.";
      this.viewerText.hidden = false;
    }
  }

  close() {
    this.viewer.hidden = true;
    this.viewerText.textContent = "";
    this.viewerImage.removeAttribute("src");
  }

  async upload() {
    if (!this.input.files || !this.input.files.length) {
      this.status.textContent = "Choose a file first.";
      return;
    }
    const body = new FormData(this.form);
    const token = /** @type {HTMLInputElement | null} */ (this.form.querySelector("input[name=csrfmiddlewaretoken]"))?.value || "";
    const name = this.input.files[0].name;
    this.status.textContent = `Uploading ${name}…`;
    let response;
    let data = {};
    try {
      response = await fetch(this.form.action, {
        method: "POST",
        body,
        headers: { Accept: "application/json", "X-CSRFToken": token },
        credentials: "same-origin",
      });
      if ((response.headers.get("content-type") || "").includes("json")) data = await response.json();
    } catch {
      this.status.textContent = "";
      this.notify(`Uploading ${name} failed: the server could not be reached.`, "error");
      return;
    }
    this.form.reset();
    if (response.ok) {
      this.status.textContent = `Uploaded ${data.file?.path || name}.`;
      this.refresh();
    } else {
      this.status.textContent = "";
      this.notify(data.error || `Uploading ${name} failed (${response.status}).`, "error");
    }
  }
}
