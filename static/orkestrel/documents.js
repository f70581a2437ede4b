// @ts-check
// Documents a user message carries (PDF, DOCX, plain text, Markdown, CSV), as the transcript
// shows them: each its name, type, size and page count, and the start of its first page's
// text. The file and its whole text stay on the server; the model read one or the other.

const KINDS = {
  "application/pdf": "PDF",
  "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "DOCX",
  "text/plain": "Text",
  "text/markdown": "Markdown",
  "text/csv": "CSV",
};

/** A byte count as people read it. */
export function sizeText(bytes) {
  if (bytes >= 1024 * 1024) return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
  if (bytes >= 1024) return `${Math.round(bytes / 1024)} KB`;
  return `${bytes} bytes`;
}

/** A document's one-line description: `PDF · 3 pages · 12 KB`. */
export function documentFacts(document) {
  const parts = [KINDS[document.mime] || document.mime || "Document"];
  if (typeof document.pages === "number") parts.push(`${document.pages} page${document.pages === 1 ? "" : "s"}`);
  if (typeof document.size === "number") parts.push(sizeText(document.size));
  return parts.join(" · ");
}

/** The list of a message's `documents` (each `{name, mime, size, pages, preview}`). */
export function renderDocuments(documents) {
  const list = document.createElement("ul");
  list.className = "msg-documents";
  list.setAttribute("aria-label", "Documents sent");
  for (const item of documents) {
    const li = document.createElement("li");
    li.className = "msg-document";
    li.dataset.testid = "message-document";
    const name = document.createElement("span");
    name.className = "msg-document-name";
    name.textContent = item.name || "document";
    const facts = document.createElement("span");
    facts.className = "msg-document-facts";
    facts.textContent = documentFacts(item);
    li.append(name, facts);
    const preview = document.createElement("p");
    preview.className = "msg-document-preview";
    // No text to show: a scanned first page (the model was told so), or an empty file.
    preview.textContent = item.preview || "(no text on the first page)";
    li.append(preview);
    list.append(li);
  }
  return list;
}
