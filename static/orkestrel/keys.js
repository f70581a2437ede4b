// @ts-check
// The API keys page: lists, creates and revokes the user's keys through the REST API
// (`/api/keys/`), signed in by the session, so every write carries the CSRF token in
// `X-CSRFToken`. A full key exists only in the answer to its creation: it is shown once, in
// the "new key" box, and nowhere else (a reload lists it by its prefix only). A key's scopes
// and profiles are chosen when it is made (none ticked among the profiles: every one).

import { el } from "./dom.js";

const root = document.getElementById("keys");
const form = /** @type {HTMLFormElement} */ (document.getElementById("key-form"));
const nameInput = /** @type {HTMLInputElement} */ (document.getElementById("key-name"));
const expiresInput = /** @type {HTMLInputElement} */ (document.getElementById("key-expires"));
const errorBox = document.getElementById("key-errors");
const list = document.getElementById("key-list");
const newBox = document.getElementById("new-key");
const newName = document.getElementById("new-key-name");
const newValue = document.getElementById("new-key-value");
const copyButton = document.getElementById("copy-key");
const copyStatus = document.getElementById("copy-status");
const profileBox = document.getElementById("key-profiles");

const apiUrl = root.dataset.apiUrl;
const csrfToken = /** @type {HTMLInputElement | null} */ (form.querySelector("input[name=csrfmiddlewaretoken]"))?.value || "";
const FIELD_LABELS = { name: "Name", expires: "Expires", scopes: "Scopes", profiles: "Profiles" };

/**
 * Call the API as this user; `{response, data}` (data is null without a JSON body).
 * @param {string} url
 * @param {{method?: string, body?: object}} [options]
 */
async function call(url, { method = "GET", body = undefined } = {}) {
  const headers = { Accept: "application/json" };
  if (method !== "GET") headers["X-CSRFToken"] = csrfToken;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(url, {
    method,
    headers,
    credentials: "same-origin",
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (response.status === 401) {
    // The session ended: sign in again and come back here (the caller never resumes).
    window.location.assign(root.dataset.loginUrl);
    return new Promise(() => {});
  }
  const json = (response.headers.get("content-type") || "").includes("json");
  return { response, data: json ? await response.json() : null };
}

/** One line per problem the API reported: field errors first, else its `detail`. */
function problems(data, fallback) {
  if (data?.errors) {
    return Object.entries(data.errors).map(([field, messages]) => {
      const text = [].concat(messages).join(" ");
      return FIELD_LABELS[field] ? `${FIELD_LABELS[field]}: ${text}` : text;
    });
  }
  return [data?.detail || fallback];
}

function showErrors(lines) {
  errorBox.textContent = lines.join("\n");
  errorBox.hidden = lines.length === 0;
}

function time(iso) {
  const when = new Date(iso);
  return el("time", {
    datetime: iso,
    text: when.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" }),
  });
}

function status(key) {
  if (key.revoked) return "revoked";
  if (key.expires && new Date(key.expires) <= new Date()) return "expired";
  return "active";
}

function renderKey(key) {
  const state = status(key);
  const meta = el(
    "span",
    { className: "conversation-meta" },
    el("code", { "data-testid": "key-prefix", text: `ork_${key.prefix}_…` }),
    " · created ",
    time(key.created),
    " · ",
    ...(key.last_used ? ["last used ", time(key.last_used)] : ["never used"]),
    " · ",
    ...(key.expires ? [state === "expired" ? "expired " : "expires ", time(key.expires)] : ["no expiry"]),
    " · ",
    el("span", { "data-testid": "key-scopes", text: (key.scopes || []).join(", ") }),
    " · ",
    el("span", {
      "data-testid": "key-profile-list",
      text: key.profiles ? `profiles: ${key.profiles.join(", ")}` : "every profile",
    }),
  );
  const actions = el("div", { className: "conversation-actions" });
  if (state === "revoked") {
    actions.append(
      el("span", { className: "badge badge-error", "data-testid": "key-status" }, "Revoked ", time(key.revoked)),
    );
  } else {
    actions.append(
      el("span", { className: "badge", "data-testid": "key-status", text: state === "expired" ? "Expired" : "Active" }),
      el(
        "details",
        { className: "row-action row-danger" },
        el("summary", { "data-testid": "revoke-key", text: "Revoke" }),
        el(
          "span",
          { className: "inline-form" },
          el("span", { text: "Programs using this key will be refused." }),
          el("button", {
            type: "button",
            className: "danger",
            "data-action": "revoke",
            "data-testid": "confirm-revoke",
            text: "Revoke permanently",
          }),
        ),
      ),
    );
  }
  return el(
    "li",
    { className: "conversation-row", "data-testid": "key-row", "data-key-id": key.id, "data-status": state },
    el("div", { className: "conversation-main" }, el("span", { className: "conversation-link", text: key.name }), meta),
    actions,
  );
}

/** Fetch every page of the user's keys and render them, newest first. */
async function refresh() {
  const keys = [];
  let url = apiUrl;
  try {
    while (url) {
      const { response, data } = await call(url);
      if (!response.ok) {
        showErrors(problems(data, `Loading the keys failed (${response.status}).`));
        return;
      }
      keys.push(...data.results);
      url = data.next;
    }
  } catch {
    showErrors(["Loading the keys failed: the server could not be reached."]);
    return;
  }
  list.replaceChildren(
    ...(keys.length ? keys.map(renderKey) : [el("li", { className: "empty", text: "No keys yet." })]),
  );
  list.removeAttribute("aria-busy");
}

/** The profiles the user may use, as checkboxes (best effort: without them, every profile). */
async function loadProfiles() {
  const boxes = [];
  let url = profileBox.dataset.profilesUrl;
  try {
    while (url) {
      const { response, data } = await call(url);
      if (!response.ok) return;
      for (const profile of data.results) {
        boxes.push(
          el(
            "label",
            {},
            el("input", { type: "checkbox", name: "profiles", value: profile.slug, "data-testid": "key-profile" }),
            ` ${profile.name} (${profile.slug})`,
          ),
        );
      }
      url = data.next;
    }
  } catch {
    return;
  }
  profileBox.append(...boxes);
}

/** The values of the ticked checkboxes named `name`. */
function ticked(name) {
  return [...form.querySelectorAll(`input[name=${name}]:checked`)].map(
    (box) => /** @type {HTMLInputElement} */ (box).value,
  );
}

async function create() {
  const body = { name: nameInput.value.trim(), scopes: ticked("scopes") };
  const profiles = ticked("profiles");
  if (profiles.length) body.profiles = profiles;
  if (expiresInput.value) body.expires = new Date(expiresInput.value).toISOString();
  let result;
  try {
    result = await call(apiUrl, { method: "POST", body });
  } catch {
    showErrors(["Creating the key failed: the server could not be reached."]);
    return;
  }
  const { response, data } = result;
  if (response.status !== 201) {
    showErrors(problems(data, `Creating the key failed (${response.status}).`));
    return;
  }
  showErrors([]);
  form.reset();
  newName.textContent = data.name;
  newValue.textContent = data.key;
  copyStatus.textContent = "";
  newBox.hidden = false;
  await refresh();
loadProfiles();
}

async function revoke(button) {
  button.disabled = true;
  const id = button.closest("[data-key-id]").dataset.keyId;
  let result;
  try {
    result = await call(`${apiUrl}${encodeURIComponent(id)}/`, { method: "DELETE" });
  } catch {
    showErrors(["Revoking the key failed: the server could not be reached."]);
    button.disabled = false;
    return;
  }
  const { response, data } = result;
  showErrors(response.status === 204 ? [] : problems(data, `Revoking the key failed (${response.status}).`));
  await refresh();
loadProfiles();
}

async function copyKey() {
  try {
    await navigator.clipboard.writeText(newValue.textContent);
    copyStatus.textContent = "Copied.";
  } catch {
    // No clipboard access (an insecure origin, or refused): select it for a manual copy.
    const range = document.createRange();
    range.selectNodeContents(newValue);
    window.getSelection().removeAllRanges();
    window.getSelection().addRange(range);
    copyStatus.textContent = "Selected: press Ctrl+C (⌘C) to copy.";
  }
}

form.addEventListener("submit", (event) => {
  event.preventDefault();
  create();
});
copyButton.addEventListener("click", copyKey);
list.addEventListener("click", (event) => {
  const button = /** @type {Element} */ (event.target).closest("[data-action=revoke]");
  if (button) revoke(button);
});

refresh();
loadProfiles();
