// @ts-check
// An MCP server's request for the user's input (the `input` frame's requests), as one item of
// the approval panel: a form of the server's fields (a label from each field's title, its
// description under it, an input by its kind, required fields marked, defaults filled in) with
// Submit, Decline and Cancel; or, for a page to open, its address with Open page, Done and
// Decline. Answers go out as `respond` frames through `decide`; the panel removes the item
// once the server's `input` frame says it is settled, in every tab.

import { el } from "./dom.js";

// At most this many options show as radio buttons; more go in a list box.
const RADIOS = 4;
const TEXT_TYPES = { email: "email", uri: "url", date: "date", "date-time": "datetime-local" };

/**
 * @typedef {{value: string, label: string}} InputOption
 * @typedef {{name: string, kind: string, label: string, description: string, required: boolean,
 *   default: any, options: InputOption[], format: string | null, minimum: number | null,
 *   maximum: number | null, min_length: number | null, max_length: number | null,
 *   min_items: number | null, max_items: number | null}} InputField
 * @typedef {{id: string, server: string, mode: string, message: string, fields: InputField[],
 *   url: string | null, expires: string}} InputRequest
 * @typedef {(item: HTMLElement, frame: object) => void} Decide
 */

/**
 * The panel's item for `request`; `decide(item, frame)` sends an answer.
 * @param {InputRequest} request
 * @param {Decide} decide
 */
export function inputItem(request, decide) {
  const key = request.id.replace(/[^a-z0-9]/gi, "");
  const message = el("p", { className: "question-text", id: `input-message-${key}`, "data-testid": "input-message", text: request.message });
  const item = el(
    "div",
    { className: "approval input-request", "data-testid": "input-request", "data-request-id": request.id },
    el(
      "p",
      { className: "approval-head" },
      el("code", { className: "tool-name", text: request.server }),
      request.mode === "url" ? " asks you to open a page:" : " asks you:",
    ),
    message,
  );
  const answer = (action, content) => decide(item, content ? { type: "respond", id: request.id, action, content } : { type: "respond", id: request.id, action });
  item.append(request.mode === "url" ? pageToOpen(request, answer) : form(request, key, answer));
  if (request.expires) {
    const at = new Date(request.expires);
    item.append(el("p", { className: "approval-expires", text: `Cancelled at ${at.toLocaleTimeString()} if nobody answers.` }));
  }
  return item;
}

/** Show the server's refusal of an answer (`message`) in the item's form. */
export function showRefusal(item, message) {
  const error = item.querySelector("[data-testid=input-error]");
  if (!(error instanceof HTMLElement)) return;
  error.textContent = message;
  error.hidden = false;
}

/** A page to open: its address, Open page (a new tab), Done (accept) and Decline. */
function pageToOpen(request, answer) {
  const url = request.url || "";
  const open = el("a", { className: "button", href: url, target: "_blank", rel: "noopener noreferrer", "data-testid": "input-open", text: "Open page" });
  const done = el("button", { type: "button", "data-testid": "input-done", text: "Done" });
  const decline = el("button", { type: "button", className: "danger", "data-testid": "input-decline", text: "Decline" });
  done.addEventListener("click", () => answer("accept"));
  decline.addEventListener("click", () => answer("decline"));
  return el(
    "div",
    {},
    el("p", { className: "input-url" }, el("a", { href: url, target: "_blank", rel: "noopener noreferrer", "data-testid": "input-url", text: url })),
    el("div", { className: "approval-actions" }, open, done, decline),
  );
}

/** The form of the server's fields, with Submit, Decline and Cancel. */
function form(request, key, answer) {
  const node = el("form", { className: "input-form", "data-testid": "input-form", "aria-labelledby": `input-message-${key}` });
  const error = el("p", { className: "input-error", role: "alert", "data-testid": "input-error", hidden: true });
  const fields = request.fields.map((field, index) => ({ field, id: `input-${key}-${index}` }));
  for (const { field, id } of fields) node.append(control(field, id));
  const submit = el("button", { type: "submit", "data-testid": "input-submit", text: "Submit" });
  const decline = el("button", { type: "button", className: "danger", "data-testid": "input-decline", text: "Decline" });
  const cancel = el("button", { type: "button", className: "secondary", "data-testid": "input-cancel", text: "Cancel" });
  node.append(error, el("div", { className: "approval-actions" }, submit, decline, cancel));
  node.addEventListener("submit", (event) => {
    event.preventDefault();
    const content = {};
    for (const { field, id } of fields) {
      const value = read(node, field, id);
      if (value !== undefined) content[field.name] = value;
    }
    error.hidden = true;
    answer("accept", content);
  });
  decline.addEventListener("click", () => answer("decline"));
  cancel.addEventListener("click", () => answer("cancel"));
  return node;
}

/** The label text of `field`: its title, and whether it is required. */
function labelText(field) {
  return field.required ? `${field.label} (required)` : field.label;
}

/** One field's label, input and description. */
function control(field, id) {
  const hint = field.description ? el("p", { className: "input-hint", id: `${id}-hint`, text: field.description }) : null;
  const described = hint ? `${id}-hint` : null;
  if (field.kind === "choices" || (field.kind === "choice" && field.options.length <= RADIOS)) {
    const multiple = field.kind === "choices";
    const chosen = multiple ? new Set(field.default || []) : new Set(field.default == null ? [] : [field.default]);
    const set = el("fieldset", { className: "input-field input-options", "data-field": field.name, "aria-describedby": described }, el("legend", { text: labelText(field) }));
    field.options.forEach((option, index) => {
      const optionId = `${id}-${index}`;
      const box = el("input", {
        type: multiple ? "checkbox" : "radio",
        id: optionId,
        name: id,
        value: option.value,
        checked: chosen.has(option.value),
        required: !multiple && field.required,
      });
      set.append(el("span", { className: "input-option" }, box, el("label", { for: optionId, text: option.label })));
    });
    if (hint) set.append(hint);
    return set;
  }
  const label = el("label", { for: id, text: labelText(field) });
  if (field.kind === "boolean") {
    const box = el("input", { type: "checkbox", id, name: field.name, checked: field.default === true, "aria-describedby": described });
    return el("div", { className: "input-field input-check", "data-field": field.name }, box, label, hint);
  }
  let input;
  if (field.kind === "choice") {
    input = el("select", { id, name: field.name, required: field.required, "aria-describedby": described });
    input.append(el("option", { value: "", text: field.required ? "Choose…" : "(none)" }));
    for (const option of field.options) input.append(el("option", { value: option.value, text: option.label, selected: option.value === field.default }));
  } else if (field.kind === "number" || field.kind === "integer") {
    input = el("input", {
      type: "number",
      id,
      name: field.name,
      required: field.required,
      min: field.minimum,
      max: field.maximum,
      step: field.kind === "integer" ? "1" : "any",
      value: field.default,
      "aria-describedby": described,
    });
  } else {
    input = el("input", {
      type: TEXT_TYPES[field.format || ""] || "text",
      id,
      name: field.name,
      required: field.required,
      minlength: field.min_length,
      maxlength: field.max_length,
      value: field.default,
      "aria-describedby": described,
    });
  }
  return el("div", { className: "input-field", "data-field": field.name }, label, input, hint);
}

/** The value the user gave `field` (`undefined`: none, left out of the answer). */
function read(node, field, id) {
  if (field.kind === "choices") {
    return Array.from(node.querySelectorAll(`input[name="${id}"]:checked`), (box) => /** @type {HTMLInputElement} */ (box).value);
  }
  if (field.kind === "choice" && field.options.length <= RADIOS) {
    const checked = node.querySelector(`input[name="${id}"]:checked`);
    return checked instanceof HTMLInputElement ? checked.value : undefined;
  }
  const input = node.querySelector(`#${CSS.escape(id)}`);
  if (input instanceof HTMLInputElement && input.type === "checkbox") return input.checked;
  if (!(input instanceof HTMLInputElement || input instanceof HTMLSelectElement) || input.value === "") return undefined;
  if (field.kind === "number" || field.kind === "integer") return Number(input.value);
  return input.value;
}
