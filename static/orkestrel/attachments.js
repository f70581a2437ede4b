// @ts-check
// Images attached to the next message: by the Attach button, by pasting, or by dropping them
// on the composer, all three the same way. Each is checked as the server checks it (PNG,
// JPEG, GIF or WebP, within the server's byte limit, at most MAX_IMAGES per message) and
// previewed at once; the upload (POST /c/<id>/attachments/) happens when the message is sent,
// so a preview removed before sending leaves nothing on the server.

// orkestrel.protocol.MAX_IMAGES and the image kinds workspaces.services.image_mime knows.
export const MAX_IMAGES = 8;
export const IMAGE_TYPES = ["image/png", "image/jpeg", "image/gif", "image/webp"];

function sizeText(bytes) {
  if (bytes >= 1024 * 1024) return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
  if (bytes >= 1024) return `${Math.round(bytes / 1024)} KB`;
  return `${bytes} bytes`;
}

/** The image files among `files`; the others are named in `refused`. */
function images(files, refused) {
  const kept = [];
  for (const file of files) {
    if (IMAGE_TYPES.includes(file.type)) kept.push(file);
    else refused.push(`${file.name || "That file"} is not a PNG, JPEG, GIF or WebP image.`);
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
   * @param {(message: string, kind?: string) => void} options.notify - how refusals are shown
   */
  constructor({ list, uploadUrl, csrfToken, maxBytes, notify }) {
    this.list = list;
    this.uploadUrl = uploadUrl;
    this.csrfToken = csrfToken;
    this.maxBytes = maxBytes;
    this.notify = notify;
    this.items = []; // {file, li, id}: `id` once uploaded (a failed send reuses it)
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
    for (const file of images(Array.from(files), refused)) {
      if (this.items.length >= MAX_IMAGES) {
        refused.push(`At most ${MAX_IMAGES} images go with one message.`);
        break;
      }
      if (file.size > this.maxBytes) {
        refused.push(`${file.name || "The image"} is larger than ${sizeText(this.maxBytes)}.`);
        continue;
      }
      this.items.push({ file, li: this.preview(file), id: null });
    }
    for (const message of refused) this.notify(message);
    this.show();
  }

  preview(file) {
    const label = file.name || "pasted image";
    const image = document.createElement("img");
    image.className = "attachment-thumb";
    image.alt = label;
    // A data: URL (the page's CSP allows no blob: images).
    const reader = new FileReader();
    reader.addEventListener("load", () => {
      image.src = String(reader.result);
    });
    reader.readAsDataURL(file);
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

  /** Give back images the server holds already (pending messages taken back, each
   * `{id, mime, size}`): listed by type and size, sent again by their ids. */
  restore(attached) {
    let left = 0;
    for (const item of attached) {
      if (this.items.length >= MAX_IMAGES) {
        left += 1;
        continue;
      }
      const label = `${item.mime || "image"} · ${sizeText(item.size || 0)}`;
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
      this.items.push({ file: null, li, id: item.id });
    }
    if (left) this.notify(`${left} more image(s) wait on the server; send these first.`, "warning");
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

  /** Upload every image not uploaded yet; their attachment ids, in order (throws the
   * server's reason when one is refused). */
  async upload() {
    for (const item of this.items) {
      if (item.id) continue;
      const body = new FormData();
      body.append("file", item.file, item.file.name || "image");
      const response = await fetch(this.uploadUrl, {
        method: "POST",
        credentials: "same-origin",
        headers: { Accept: "application/json", "X-CSRFToken": this.csrfToken },
        body,
      });
      const answer = await response.json().catch(() => ({}));
      if (!response.ok || !answer.attachment) {
        throw new Error(answer.error || `The image could not be attached (HTTP ${response.status}).`);
      }
      item.id = answer.attachment.id;
    }
    return this.items.map((item) => item.id);
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
