// @ts-check
// Images and documents attached to the next message: by the Attach button, by pasting, or by
// dropping them on the composer, all three the same way. Each is checked as the server checks
// it (PNG, JPEG, GIF or WebP images; PDF, DOCX, plain text, Markdown or CSV documents; each
// within the server's byte limit for its kind, at most MAX_IMAGES files per message) and
// previewed at once; the upload (POST /c/<id>/attachments/) happens when the message is sent,
// so a preview removed before sending leaves nothing on the server. The server reads a
// document's text then (and refuses a PDF of too many pages).

import { sizeText } from "./documents.js";

// orkestrel.protocol.MAX_IMAGES and the image kinds workspaces.services.image_mime knows.
export const MAX_IMAGES = 8;
export const IMAGE_TYPES = ["image/png", "image/jpeg", "image/gif", "image/webp"];
// The kinds orkestrel.document_reader reads (a browser may not know a type: the name says).
export const DOCUMENT_TYPES = [
  "application/pdf",
  "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
  "text/plain",
  "text/markdown",
  "text/csv",
];
const DOCUMENT_NAME = /\.(pdf|docx|txt|text|md|markdown|csv)$/i;

/** Whether `file` is a document the server reads. */
export function isDocument(file) {
  return DOCUMENT_TYPES.includes(file.type) || DOCUMENT_NAME.test(file.name || "");
}

/** The image and document files among `files`; the others are named in `refused`. */
function attachable(files, refused) {
  const kept = [];
  for (const file of files) {
    if (IMAGE_TYPES.includes(file.type) || isDocument(file)) kept.push(file);
    else refused.push(`${file.name || "That file"} is neither an image (PNG, JPEG, GIF, WebP) nor a document (PDF, DOCX, text, Markdown, CSV).`);
  }
  return kept;
}

export class Attachments {
  /**
   * @param {object} options
   * @param {HTMLElement} options.list - the (hidden while empty) list of previews
   * @param {string} options.uploadUrl - where each image is uploaded when the message is sent
   * @param {string} options.csrfToken - the page's CSRF token
   * @param {number} options.maxBytes - the server's largest image
   * @param {number} [options.maxDocumentBytes] - the server's largest document
   * @param {(message: string, kind?: string) => void} options.notify - how refusals are shown
   */
  constructor({ list, uploadUrl, csrfToken, maxBytes, maxDocumentBytes, notify }) {
    this.list = list;
    this.uploadUrl = uploadUrl;
    this.csrfToken = csrfToken;
    this.maxBytes = maxBytes;
    this.maxDocumentBytes = maxDocumentBytes || 10 * 1024 * 1024;
    this.notify = notify;
    this.items = []; // {file, li, id, info}: `id` (and the server's `info`) once uploaded
    list.addEventListener("click", (event) => {
      const button = /** @type {Element} */ (event.target).closest(".attachment-remove");
      if (!button) return;
      const index = this.items.findIndex((item) => item.li === button.closest(".attachment"));
      if (index >= 0) this.remove(index);
    });
  }

  get count() {
    return this.items.length;
  }

  /** Attach `files` (a FileList or an array): refusals are notified, the rest previewed. */
  add(files) {
    const refused = [];
    for (const file of attachable(Array.from(files), refused)) {
      if (this.items.length >= MAX_IMAGES) {
        refused.push(`At most ${MAX_IMAGES} files go with one message.`);
        break;
      }
      const limit = IMAGE_TYPES.includes(file.type) ? this.maxBytes : this.maxDocumentBytes;
      if (file.size > limit) {
        refused.push(`${file.name || "The file"} is larger than ${sizeText(limit)}.`);
        continue;
      }
      this.items.push({ file, li: this.preview(file), id: null, info: null });
    }
    for (const message of refused) this.notify(message);
    this.show();
  }

  preview(file) {
    const document_ = !IMAGE_TYPES.includes(file.type);
    const label = file.name || (document_ ? "document" : "pasted image");
    /** @type {HTMLElement} */
    let image;
    if (document_) {
      // No thumbnail: the kind, by its name's extension (the server reads the text on upload).
      image = document.createElement("span");
      image.className = "attachment-doc";
      image.setAttribute("aria-hidden", "true");
      image.textContent = (label.match(/\.([a-z0-9]+)$/i)?.[1] || "doc").toUpperCase();
    } else {
      const img = document.createElement("img");
      img.className = "attachment-thumb";
      img.alt = label;
      // A data: URL (the page's CSP allows no blob: images).
      const reader = new FileReader();
      reader.addEventListener("load", () => {
        img.src = String(reader.result);
      });
      reader.readAsDataURL(file);
      image = img;
    }
    const name = document.createElement("span");
    name.className = "attachment-name";
    name.textContent = `${label} · ${sizeText(file.size)}`;
    const remove = document.createElement("button");
    remove.type = "button";
    remove.className = "attachment-remove";
    remove.setAttribute("aria-label", `Remove ${label}`);
    remove.textContent = "×";
    const li = document.createElement("li");
    li.className = "attachment";
    li.dataset.testid = "attachment";
    li.append(image, name, remove);
    this.list.append(li);
    return li;
  }

  /** Give back files the server holds already (pending messages taken back, each
   * `{id, mime, size}`, a document's with its `name`): listed, sent again by their ids. */
  restore(attached) {
    let left = 0;
    for (const item of attached) {
      if (this.items.length >= MAX_IMAGES) {
        left += 1;
        continue;
      }
      const label = `${item.name || item.mime || "image"} · ${sizeText(item.size || 0)}`;
      const name = document.createElement("span");
      name.className = "attachment-name";
      name.textContent = `taken back: ${label}`;
      const remove = document.createElement("button");
      remove.type = "button";
      remove.className = "attachment-remove";
      remove.setAttribute("aria-label", `Remove ${label}`);
      remove.textContent = "×";
      const li = document.createElement("li");
      li.className = "attachment";
      li.dataset.testid = "attachment";
      li.append(name, remove);
      this.list.append(li);
      this.items.push({ file: null, li, id: item.id, info: item });
    }
    if (left) this.notify(`${left} more file(s) wait on the server; send these first.`, "warning");
    this.show();
  }

  remove(index) {
    const [item] = this.items.splice(index, 1);
    item.li.remove();
    this.show();
  }

  clear() {
    this.items = [];
    this.list.replaceChildren();
    this.show();
  }

  show() {
    this.list.hidden = this.items.length === 0;
  }

  /** Upload every file not uploaded yet; their attachment ids, in order (throws the
   * server's reason when one is refused: too large, a PDF of too many pages, unreadable). */
  async upload() {
    for (const item of this.items) {
      if (item.id) continue;
      const body = new FormData();
      body.append("file", item.file, item.file.name || "attachment");
      const response = await fetch(this.uploadUrl, {
        method: "POST",
        credentials: "same-origin",
        headers: { Accept: "application/json", "X-CSRFToken": this.csrfToken },
        body,
      });
      const answer = await response.json().catch(() => ({}));
      if (!response.ok || !answer.attachment) {
        throw new Error(answer.error || `${item.file.name || "The file"} could not be attached (HTTP ${response.status}).`);
      }
      item.id = answer.attachment.id;
      item.info = answer.attachment;
    }
    return this.items.map((item) => item.id);
  }

  /** What the uploaded files look like in the transcript until the server's message comes:
   * how many images, and the documents as `{name, mime, size, pages, preview}`. */
  shown() {
    const documents = this.items.map((item) => item.info).filter((info) => info && info.name);
    return { images_count: this.items.length - documents.length, documents };
  }

  /** Take images from the `picker` the `button` opens, from pastes into `input`, and from
   * drops on `zone`. */
  watch({ input, zone, button, picker }) {
    button.addEventListener("click", () => picker.click());
    picker.addEventListener("change", () => {
      this.add(picker.files);
      picker.value = ""; // the same file can be picked again
    });
    input.addEventListener("paste", (event) => {
      const data = event.clipboardData;
      // Text wins: copying from a document can carry a picture of the text beside it.
      if (!data || !data.files.length || data.getData("text/plain")) return;
      event.preventDefault();
      this.add(data.files);
    });
    const carriesFiles = (event) => Array.from(event.dataTransfer?.types || []).includes("Files");
    for (const kind of ["dragenter", "dragover"]) {
      zone.addEventListener(kind, (event) => {
        if (!carriesFiles(event)) return;
        event.preventDefault();
        event.dataTransfer.dropEffect = "copy";
        zone.classList.add("is-dropping");
      });
    }
    zone.addEventListener("dragleave", (event) => {
      if (!zone.contains(event.relatedTarget)) zone.classList.remove("is-dropping");
    });
    zone.addEventListener("drop", (event) => {
      zone.classList.remove("is-dropping");
      if (!carriesFiles(event)) return;
      event.preventDefault();
      this.add(event.dataTransfer.files);
      input.focus();
    });
  }
}
