// The chat page: the websocket client of README's "Live chat" protocol.
//
// The server owns every run: this page only renders. On every (re)connect the server sends a
// `state` frame and the transcript is rebuilt from it; a run in flight continues from
// `state.run`, and live frames are applied in `seq` order (a gap asks for a fresh `state`).
// Nothing here depends on timers firing on time (background tabs throttle them): frames are
// rendered as they arrive, and only the reconnect backoff waits.

import { ApprovalPanel } from "./approvals.js";
import { Attachments } from "./attachments.js";
import { LiveRun } from "./live.js";
import { copyText } from "./markdown.js";
import { APPLY, GAP, RunTracker } from "./protocol.js";
import {
  DECISIONS,
  el,
  fillOriginals,
  messageAction,
  renderBranchNav,
  renderEarlier,
  renderEditor,
  renderMessage,
  renderSection,
  renderToolCard,
  showDecision,
  SOURCES,
  transcriptItems,
} from "./render.js";
import { embeddedTemplates, SlashMenu } from "./slash.js";
import { ChatSocket } from "./socket.js";
import { WorkspacePanel } from "./workspace.js";

const root = document.getElementById("chat");
const transcript = document.getElementById("transcript");
const emptyNote = document.getElementById("transcript-empty");
const composer = document.getElementById("composer");
const input = document.getElementById("message-input");
const stopButton = document.getElementById("stop");
const compactForm = document.getElementById("compact-form");
const compactFocus = document.getElementById("compact-focus");
const notices = document.getElementById("notices");
const connection = document.getElementById("connection");
const usageBox = document.querySelector("[data-testid=usage]");
const contextBox = document.querySelector("[data-testid=context-meter]");

const ERROR_TEXT = {
  busy: "A reply is still running. Wait for it to finish, or stop it.",
  nothing_to_continue: "There is nothing to continue yet: say something first.",
  too_large: "That message is too large to send.",
  invalid: "The server could not read that request.",
  unknown_type: "The server did not understand that request.",
  run_failed: "The reply failed.",
  unknown_skill: "There is no skill of that name.",
};
// A `/skill name` is answered with one of these notices (or an `unknown_skill` error).
const SKILL_NOTICES = new Set(["skill_activated", "skill_active"]);
// Errors that refuse a `send`: the message was not accepted, so its text goes back in the box.
const REJECTED = new Set(["busy", "too_large", "invalid", "unknown_type", "no_profile", "nothing_to_continue"]);

// Errors that refuse an `approve`: its buttons work again.
const APPROVAL_ERRORS = new Set(["invalid", "decided", "operator", "not_found"]);

const tracker = new RunTracker();
let live = null; // the LiveRun being streamed, or null
let connectedBefore = false;
let notes = { denials: {}, failures: new Set(), displays: {} };
// Ids of calls whose tool failed: their cards read as errors when re-rendered.
const pending = new Map(); // nonce -> {li, content}: sent, not yet acknowledged by `started`

// -- notices and status -------------------------------------------------------------------

/** Why a run stopped early, as the user should read it (the abort frame's reason). */
function stopNote(reason) {
  const kept = "What was written so far is kept.";
  if (reason === "timeout") return `Stopped: the answer ran past the agent's time limit. ${kept}`;
  if (reason === "budget exhausted") return `Stopped: the agent's token budget ran out. ${kept}`;
  if (!reason || reason === "stopped" || reason === "stopped by user") return `Stopped. ${kept}`;
  return `Stopped (${reason}). ${kept}`;
}

function sectionUrl(id) {
  return `${root.dataset.sectionsUrl}${encodeURIComponent(id)}/`;
}

function earlierUrl(before) {
  return `${root.dataset.messagesUrl}?before=${encodeURIComponent(before)}`;
}

/** GET `url` as this user and parse the JSON answer; throws on an HTTP error. */
async function fetchJson(url) {
  const response = await fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } });
  if (!response.ok) throw new Error(`HTTP ${response.status}`);
  return response.json();
}

function notify(message, kind = "error") {
  const notice = el(
    "div",
    { className: `notice notice-${kind}`, role: kind === "error" ? "alert" : "status", "data-testid": "notice" },
    el("span", { className: "notice-text", text: message }),
    el("button", { type: "button", className: "notice-close", "aria-label": "Dismiss", text: "×" }),
  );
  notices.append(notice);
}

notices.addEventListener("click", (event) => {
  const button = event.target.closest(".notice-close");
  if (button) button.closest(".notice").remove();
});

function setConnection(state, text) {
  connection.dataset.state = state;
  connection.textContent = text;
}

function setStreaming(streaming) {
  stopButton.hidden = !streaming;
  root.classList.toggle("is-streaming", streaming);
}

// -- usage and context ----------------------------------------------------------------------

function showUsage(usage, answer) {
  // `usage` is the conversation's; `answer`, when given, one run's (its cost is shown apart).
  const dollars = (cost) => {
    if (cost === null || cost === undefined) return "";
    const value = Number(cost);
    const digits = value >= 1 || value === 0 ? { maximumFractionDigits: 2 } : { maximumSignificantDigits: 2 };
    return value.toLocaleString("en-US", { style: "currency", currency: "USD", ...digits });
  };
  const slot = (name) => {
    let node = usageBox.querySelector(`.usage-${name}`);
    if (!node) {
      node = document.createElement("span");
      node.className = `usage-${name}`;
      usageBox.append(" ", node);
    }
    return node;
  };
  if (answer) slot("answer").textContent = answer.cost == null ? "" : `this answer ${dollars(answer.cost)}`;
  if (!usage) return;
  for (const key of ["total", "prompt", "completion", "cache_read", "cache_write", "reasoning"]) {
    const value = Number(usage[key]) || 0;
    usageBox.dataset[key] = String(value);
    const node = usageBox.querySelector(`.usage-${key}`);
    if (node) node.textContent = String(value);
  }
  // Cached input and reasoning are parts of prompt and completion: told on hover.
  const { cache_read: read, cache_write: write, reasoning } = usageBox.dataset;
  usageBox.title = `cache read ${read}, cache write ${write}, reasoning ${reasoning}`;
  usageBox.dataset.cost = usage.cost ?? "";
  slot("cost").textContent = usage.cost == null ? "" : `· ${dollars(usage.cost)}`;
}

function showContext(context) {
  if (!context) return;
  const used = Number(context.used) || 0;
  const windowSize = context.window === null || context.window === undefined ? null : Number(context.window);
  contextBox.dataset.used = String(used);
  contextBox.dataset.window = windowSize === null ? "" : String(windowSize);
  contextBox.dataset.approximate = context.approximate ? "true" : "false";
  contextBox.hidden = !windowSize;
  if (!windowSize) return;
  const meter = contextBox.querySelector("meter");
  meter.max = windowSize;
  meter.low = Math.round(windowSize * 0.75);
  meter.high = Math.round(windowSize * 0.9);
  meter.optimum = 0;
  meter.value = Math.min(used, windowSize);
  // An estimate reads as one: the provider has not counted this history.
  contextBox.querySelector(".context-used").textContent = `${context.approximate ? "≈" : ""}${used}`;
  contextBox.querySelector(".context-window").textContent = String(windowSize);
}

// -- transcript -----------------------------------------------------------------------------

function topItems() {
  return Array.from(transcript.children);
}

function hasMessage(id) {
  return Boolean(id) && topItems().some((li) => li.dataset.messageId === id);
}

/** Exactly one element is the answer: the streaming one, else the last assistant text. */
function markAnswer() {
  for (const node of transcript.querySelectorAll("[data-testid=answer]")) node.removeAttribute("data-testid");
  let body = live ? live.answerBody() : null;
  if (!body) {
    const assistants = topItems().filter((li) => li.classList.contains("msg-assistant"));
    for (let index = assistants.length - 1; index >= 0 && !body; index -= 1) {
      body = assistants[index].querySelector(":scope > .msg-body");
    }
  }
  if (body) body.dataset.testid = "answer";
  emptyNote.hidden = transcript.children.length > 0;
}

function nearBottom() {
  return transcript.getBoundingClientRect().bottom <= window.innerHeight + 160;
}

// -- "jump to latest": shown while the newest message is out of view ----------------------

const jumpButton = document.getElementById("jump-latest");

function showJump() {
  jumpButton.hidden = nearBottom();
}

function jumpToLatest() {
  const last = transcript.lastElementChild;
  if (last) last.scrollIntoView({ block: "end" });
  jumpButton.hidden = true;
}

jumpButton.addEventListener("click", jumpToLatest);
window.addEventListener("scroll", showJump, { passive: true });

function follow(wasNear) {
  if (!wasNear) return;
  // A call waiting for a decision stays where the eye is, not the message above it.
  if (!approvals.box.hidden) return;
  const last = transcript.lastElementChild;
  if (last) last.scrollIntoView({ block: "end" });
}

// -- the last turn, when it did not finish: what happened, and a way to go on ---------------

const runNote = document.getElementById("turn-note");
const retryButton = document.getElementById("turn-retry");

/** Show (or hide, for `null`) why the latest run did not finish, with Retry or Continue. */
function showRunNote(run) {
  if (!run) {
    runNote.hidden = true;
    return;
  }
  let text = "The last answer stopped early; what was written is kept.";
  if (run.status === "error") text = `The last answer failed: ${run.error || "the model did not answer"}.`;
  else if (run.status === "interrupted") text = "The last answer was interrupted (the server stopped); what was written is kept.";
  else if (run.stop_reason === "timeout") text = "The last answer ran past the agent's time limit; what was written is kept.";
  runNote.querySelector(".turn-note-text").textContent = text;
  retryButton.textContent = run.status === "error" ? "Retry" : "Continue";
  retryButton.dataset.run = run.id;
  runNote.hidden = false;
}

retryButton.addEventListener("click", async () => {
  retryButton.disabled = true;
  try {
    await apiWrite("POST", `/api/runs/${encodeURIComponent(retryButton.dataset.run)}/retry/`);
    runNote.hidden = true;
  } catch (error) {
    notify(error.message);
  } finally {
    retryButton.disabled = false;
  }
});

// -- pending messages: sent while an answer runs, the next run takes them ------------------

const pendingBox = document.getElementById("pending-box");

/** Show the messages the server holds for the next run (our own bubbles for them go). */
function showPending(messages) {
  for (const message of messages) {
    const own = message.nonce ? pending.get(message.nonce) : null;
    if (own) {
      own.li.remove();
      pending.delete(message.nonce);
    }
  }
  const items = messages.map((message) =>
    el("li", { text: message.content || `${message.images_count} image(s)` }),
  );
  pendingBox.querySelector(".pending-list").replaceChildren(...items);
  pendingBox.hidden = messages.length === 0;
}

// -- active skills: chips beside the title, kept in step by `state` and `skills` frames ----

const skillsBox = document.getElementById("skills");

function showSkills(names) {
  if (!skillsBox || !Array.isArray(names)) return;
  const chips = names.map((name) => el("li", { className: "skill-chip", "data-testid": "skill", text: String(name) }));
  skillsBox.querySelector(".skill-list").replaceChildren(...chips);
  skillsBox.hidden = chips.length === 0;
}

// -- approvals: tool calls an `ask` rule held, waiting for a person ------------------------

const approvals = new ApprovalPanel({ send: (frame) => send(frame), notify, before: pendingBox });

document.getElementById("pending-edit").addEventListener("click", () => {
  if (!send({ type: "pending_pop" })) notify("Not connected right now; reconnecting…", "warning");
});

function renderState(state) {
  notes = {
    denials: state.denials || {},
    failures: new Set(state.failures || []),
    displays: state.displays || {},
  };
  DECISIONS.clear();
  for (const decision of Object.values(state.decisions || {})) DECISIONS.set(decision.call_id, decision);
  const nodes = [];
  for (const section of state.sections || []) {
    nodes.push(renderSection(section, notes, sectionUrl(section.id)));
  }
  const messages = state.messages || [];
  if (state.earlier && messages.length) nodes.push(renderEarlier(state.earlier, earlierUrl(messages[0].id)));
  for (const item of transcriptItems(messages, notes)) {
    nodes.push(renderMessage(item.message, item.tools));
  }
  transcript.replaceChildren(...nodes);
  showRunNote(state.last_run);
  showSkills(state.conversation?.skills || []);
  showPending(state.pending || []);
  approvals.show(state.approvals || []);
  showUsage(state.usage);
  showContext(state.context);
  showBranches(state);
}

function startLive(runId) {
  if (live && live.id === String(runId)) return live;
  if (live && !live.settled) live.finish(null, null);
  live = new LiveRun(runId, transcript);
  setStreaming(true);
  return live;
}

function resumeRun(run) {
  startLive(run.id);
  if (run.thinking) live.think(run.thinking);
  for (const tool of run.tools || []) {
    // Tools committed before the state was read already have their card.
    const id = tool.call?.id;
    if (id && transcript.querySelector(`.tool-card[data-call-id="${CSS.escape(id)}"]`)) continue;
    live.tool(tool);
  }
  if (run.content) live.token(run.content);
}

function reconcilePending(state, afterReconnect) {
  // A message that reached the server is in `state`; after a reconnect, one that is not was
  // lost with the old socket: give its text back rather than show it as sent.
  const users = (state.messages || []).filter((message) => message.role === "user");
  for (const [nonce, entry] of pending) {
    const index = users.findIndex((message) => message.content === entry.content);
    if (index >= 0) {
      users.splice(index, 1);
      pending.delete(nonce);
    } else if (afterReconnect) {
      pending.delete(nonce);
      restoreDraft(entry.content);
      notify("Your last message may not have been sent; it is back in the message box.", "warning");
    } else {
      transcript.append(entry.li);
    }
  }
}

function restoreDraft(content) {
  if (!input.value.trim()) {
    input.value = content;
    autosize();
  }
}

// -- frames ---------------------------------------------------------------------------------

const handlers = {
  state(frame, reconnected) {
    const wasNear = nearBottom();
    live = null;
    renderState(frame);
    // The transcript now holds the server's state (tests and tools wait on this).
    transcript.dataset.synced = "true";
    tracker.reset(frame.run);
    if (frame.run) resumeRun(frame.run);
    else setStreaming(false);
    reconcilePending(frame, reconnected);
    workspace.refresh();
    follow(wasNear);
  },
  started(frame) {
    showRunNote(null);
    const entry = frame.nonce ? pending.get(frame.nonce) : null;
    if (entry) pending.delete(frame.nonce);
    if (frame.message && !hasMessage(frame.message.id)) {
      const li = renderMessage(frame.message);
      if (entry && entry.li.isConnected) entry.li.replaceWith(li);
      else transcript.append(li);
    } else if (entry) {
      entry.li.remove();
    }
    if (frame.title) {
      // An untitled conversation is named after its first message on the server.
      const heading = document.getElementById("chat-title");
      if (heading) heading.textContent = frame.title;
    }
    startLive(frame.run);
  },
  token(frame) {
    startLive(frame.run).token(frame.content || "");
  },
  think(frame) {
    startLive(frame.run).think(frame.content || "");
  },
  block_end(frame) {
    if (frame.block === "thinking") startLive(frame.run).thought(frame.seconds);
  },
  tool_call(frame) {
    startLive(frame.run).callDelta(frame);
  },
  tool_execute(frame) {
    startLive(frame.run).execute(frame);
  },
  tool_progress(frame) {
    startLive(frame.run).progress(frame);
  },
  tool(frame) {
    startLive(frame.run).tool(frame);
    const id = frame.call?.id;
    if (frame.denied && id) notes.denials[id] = { reason: frame.reason, rule: frame.rule };
    else if (id && frame.result && frame.result.error != null) notes.failures.add(id);
    if (id && frame.display != null) notes.displays[id] = frame.display;
    const name = frame.call?.name || "";
    if (name === "workspace" || name.startsWith("workspace_")) workspace.refresh();
  },
  usage(frame) {
    if (frame.total) showUsage(frame.total);
    else if (frame.usage) {
      // Without the cumulative total, add this call's usage; the next `state` is exact.
      const sum = {};
      for (const key of ["total", "prompt", "completion"]) {
        sum[key] = (Number(usageBox.dataset[key]) || 0) + (Number(frame.usage[key]) || 0);
      }
      showUsage(sum);
    }
    showContext(frame.context);
  },
  compaction(frame) {
    const section = frame.section;
    if (!section || transcript.querySelector(`:scope > [data-section-id="${CSS.escape(section.id)}"]`)) return;
    // A fold takes the oldest live messages: any not yet shown are in it too.
    transcript.querySelector(":scope > .earlier")?.remove();
    const folded = new Set((section.messages || []).map((message) => message.id));
    for (const li of topItems()) if (folded.has(li.dataset.messageId)) li.remove();
    const sections = transcript.querySelectorAll(":scope > .compaction");
    const after = sections[sections.length - 1];
    const node = renderSection(section, notes);
    if (after) after.after(node);
    else transcript.prepend(node);
  },
  committed(frame) {
    const messages = (frame.messages || []).filter((message) => !hasMessage(message.id));
    const leftover = live ? live.commit(messages) : messages;
    for (const message of leftover) {
      if (message.role === "tool") continue; // a result whose call is not on the page
      transcript.append(renderMessage(message));
    }
  },
  abort(frame) {
    if (live && live.id === String(frame.run)) live.aborted = frame.reason || "stopped";
  },
  exhaust(frame) {
    if (live && live.id === String(frame.run)) live.exhausted = frame.limit;
  },
  approval(frame) {
    approvals.show(frame.approvals || []);
    if (frame.decided) showDecision(transcript, frame.decided);
  },
  branches(frame) {
    // The chosen branch changed (here or in another tab): the messages shown did too.
    branchPoints = frame.branches || [];
    send({ type: "resync" });
  },
  skills(frame) {
    showSkills(frame.skills || []);
  },
  pending(frame) {
    showPending(frame.messages || []);
    // Taken back: the texts into the box (after what it holds), the images as attachments.
    if (frame.taken && frame.taken.length) {
      const text = frame.taken.filter((part) => part).join("\n\n");
      input.value = input.value.trim() ? `${input.value}\n\n${text}` : text;
      autosize();
    }
    if (frame.attachments && frame.attachments.length) attachments.restore(frame.attachments);
  },
  notice(frame) {
    const fallback = "Something did not work as expected; the answer goes on.";
    notify(frame.message || fallback, SKILL_NOTICES.has(frame.code) ? "info" : "warning");
  },
  wait(frame) {
    const seconds = Math.max(1, Math.round(frame.seconds || 0));
    const why = frame.status === 429 ? "The model is rate-limited" : "The model server failed";
    notify(`${why}; trying again in ${seconds} s…`, "warning");
  },
  finish(frame) {
    const result = frame.result || {};
    const run = live && live.id === String(frame.run) ? live : null;
    let note = null;
    if (result.stop === "abort" || run?.aborted) note = stopNote(run?.aborted);
    else if (result.stop === "exhaust" || run?.exhausted !== undefined) {
      note = "The agent reached its step limit before finishing.";
    }
    if (run) run.finish(result, note);
    showUsage(null, result.usage);
    if (result.partial) {
      // A run whose server process died ends on a finish too: say so, as a reload would.
      const status = result.stop === "interrupted" ? "interrupted" : "partial";
      showRunNote({ id: frame.run, status, stop_reason: run?.aborted || result.stop });
    }
    // The meter follows the history even when the model reported no usage (a stopped turn).
    showContext(frame.context);
    tracker.settle(frame.run);
    if (run) live = null;
    setStreaming(false);
  },
  error(frame) {
    if (frame.code === "duplicate") {
      // An accidental second submit: the first was taken, this one is dropped.
      const last = Array.from(pending.entries()).pop();
      if (last) {
        pending.delete(last[0]);
        last[1].li.remove();
      }
      return;
    }
    if (frame.code === "unknown_skill" && lastCommand !== null) {
      restoreDraft(lastCommand);
      lastCommand = null;
    }
    if (APPROVAL_ERRORS.has(frame.code)) approvals.released();
    if (frame.run !== undefined && frame.run !== null) {
      showRunNote({ id: frame.run, status: "error", error: frame.message });
    }
    // `busy` gets our wording; otherwise the server's message says what exactly was wrong.
    const fallback = ERROR_TEXT[frame.code] || "Something went wrong.";
    notify(frame.code === "busy" ? ERROR_TEXT.busy : frame.message || fallback);
    if (REJECTED.has(frame.code)) {
      // The last send was refused: give its text back.
      const last = Array.from(pending.entries()).pop();
      if (last) {
        pending.delete(last[0]);
        last[1].li.remove();
        restoreDraft(last[1].content);
      }
    }
    if (frame.code === "idle") setStreaming(false); // nothing was running after all
    if (frame.code === "run_failed" && live && (frame.run === undefined || live.id === String(frame.run))) {
      live.finish(null, "The reply failed.");
      tracker.settle(live.id);
      live = null;
      setStreaming(false);
    }
  },
};

let firstState = true; // the next `state` is the first on this socket

function handle(frame) {
  if (!frame || typeof frame.type !== "string") return;
  let reconnected = false;
  if (frame.type === "state") {
    reconnected = firstState && connectedBefore;
    firstState = false;
    connectedBefore = true;
  }
  const verdict = tracker.accept(frame);
  if (verdict === GAP) {
    send({ type: "resync" });
    return;
  }
  if (verdict !== APPLY) return;
  const handler = handlers[frame.type];
  if (!handler) return;
  const wasNear = nearBottom();
  handler(frame, reconnected);
  markAnswer();
  if (BRANCH_FRAMES.has(frame.type)) afterBranchFrame(frame);
  if (frame.type !== "state") follow(wasNear);
  showJump();
}

// -- socket ---------------------------------------------------------------------------------

const socket = new ChatSocket(root.dataset.socketPath, {
  onOpen() {
    firstState = true;
  },
  onFrame: handle,
  onStatus: setConnection,
  onUnauthenticated() {
    window.location.assign(root.dataset.loginUrl);
  },
});

function send(frame) {
  return socket.send(frame);
}

function reconnectNow() {
  socket.reconnectNow();
}

// -- composer -------------------------------------------------------------------------------

function autosize() {
  input.style.height = "auto";
  input.style.height = `${input.scrollHeight + 2}px`;
}

function nonce() {
  if (window.crypto && typeof window.crypto.randomUUID === "function") return window.crypto.randomUUID();
  return `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;
}

let submitting = false; // images are uploading: another Enter must not send twice
let lastCommand = null; // a `/skill` just sent, given back to the box if it is refused

/** Send what the composer holds: its text and attached images (uploaded first). */
async function submitMessage() {
  if (submitting) return;
  const content = input.value;
  if (!content.trim() && !attachments.count) {
    // As the server reads it (seed 004): an empty submission continues, like `/continue`. Not
    // while an answer runs or a message is on its way: that would only be refused as busy.
    if (live || pending.size) return;
    if (!send({ type: "send", content: "", nonce: nonce() })) {
      notify("Not connected right now; reconnecting…", "warning");
    }
    input.value = "";
    autosize();
    return;
  }
  const command = attachments.count ? null : content.trim().match(/^\/compact(?:\s+([\s\S]*))?$/);
  if (command) {
    // Done at once, no run: as the "Compact history" form does.
    requestCompaction(command[1]?.trim() || "");
    input.value = "";
    autosize();
    return;
  }
  let images = [];
  if (attachments.count) {
    submitting = true;
    composer.classList.add("is-uploading");
    try {
      images = await attachments.upload();
    } catch (error) {
      notify(error.message);
      return;
    } finally {
      submitting = false;
      composer.classList.remove("is-uploading");
    }
  }
  const id = nonce();
  const frame = { type: "send", content, nonce: id };
  if (images.length) frame.attachments = images;
  if (!send(frame)) {
    notify("Not connected right now; your message is still in the box. Reconnecting…", "warning");
    reconnectNow();
    return;
  }
  attachments.clear();
  input.value = "";
  autosize();
  input.focus();
  if (!images.length && /^\/skill(?:\s|$)/.test(content.trim())) {
    // Not a message: a notice (or an error) answers it.
    lastCommand = content;
    return;
  }
  const li = renderMessage({ id: "", role: "user", content, html: "", images_count: images.length });
  li.classList.add("is-pending");
  li.dataset.nonce = id;
  transcript.append(li);
  pending.set(id, { li, content });
  markAnswer();
  li.scrollIntoView({ block: "end" });
}

composer.addEventListener("submit", (event) => {
  event.preventDefault();
  submitMessage();
});

input.addEventListener("keydown", (event) => {
  if (slashMenu.keydown(event)) return;
  if (event.key !== "Enter" || event.shiftKey || event.isComposing || event.keyCode === 229) return;
  event.preventDefault();
  submitMessage();
});

input.addEventListener("input", autosize);

// Images by the button, by pasting and by dropping them on the composer; `/` suggestions.
const attachments = new Attachments({
  list: document.getElementById("attachment-previews"),
  uploadUrl: root.dataset.attachmentsUrl,
  csrfToken: document.querySelector("input[name=csrfmiddlewaretoken]")?.value || "",
  maxBytes: Number(root.dataset.maxImageBytes) || 5 * 1024 * 1024,
  notify,
});
attachments.watch({
  input,
  zone: composer,
  button: document.getElementById("attach"),
  picker: document.getElementById("attach-input"),
});
const slashMenu = new SlashMenu(
  document.getElementById("slash-menu"),
  input,
  embeddedTemplates("prompt-templates"),
);

stopButton.addEventListener("click", () => {
  if (!send({ type: "abort" })) notify("Not connected right now; reconnecting…", "warning");
  input.focus();
});

function requestCompaction(focus) {
  const frame = focus ? { type: "compact", focus } : { type: "compact" };
  if (send(frame)) {
    compactFocus.value = "";
    setConnection("open", "Compaction requested…");
  } else {
    notify("Not connected right now; reconnecting…", "warning");
    reconnectNow();
  }
}

compactForm.addEventListener("submit", (event) => {
  event.preventDefault();
  requestCompaction(compactFocus.value.trim());
});

// A compaction's originals load the first time they are opened (`toggle` does not bubble:
// listen in the capture phase).
transcript.addEventListener(
  "toggle",
  async (event) => {
    const details = event.target;
    if (!(details instanceof HTMLDetailsElement) || !details.open || !details.dataset.src) return;
    if (details.dataset.state === "loading" || details.dataset.state === "loaded") return;
    const list = details.querySelector(".originals");
    details.dataset.state = "loading";
    try {
      const body = await fetchJson(details.dataset.src);
      fillOriginals(list, body.messages || [], notes);
      details.dataset.state = "loaded";
    } catch {
      delete details.dataset.state; // closing and opening again retries
      list.replaceChildren(el("li", { className: "originals-error", text: "Could not load the original messages." }));
    }
  },
  true,
);

// Copy buttons: a message as it was written (markdown), a code block as its text.
transcript.addEventListener("click", async (event) => {
  const button = event.target.closest(".msg-copy, .code-copy");
  if (!button) return;
  let text = "";
  if (button.classList.contains("code-copy")) {
    text = button.closest(".code-block")?.querySelector("pre > code")?.textContent || "";
  } else {
    const li = button.closest(".msg");
    text = SOURCES.get(li) ?? li?.querySelector(":scope > .msg-body")?.textContent ?? "";
  }
  const copied = await copyText(text);
  button.textContent = copied ? "Copied" : "Copy failed";
  button.dataset.copied = copied ? "true" : "false";
  setTimeout(() => {
    button.textContent = "Copy";
    delete button.dataset.copied;
  }, 1500);
});

// "Show earlier messages": the page before the first live message shown goes above it.
transcript.addEventListener("click", async (event) => {
  const button = event.target.closest(".earlier-button");
  if (!button || button.disabled) return;
  const row = button.closest(".earlier");
  button.disabled = true;
  try {
    const page = await fetchJson(button.dataset.src);
    // A state frame may have re-rendered the transcript meanwhile (it arrives just after the
    // socket opens): the page then goes above the row that replaced this one.
    const target = row.isConnected ? row : transcript.querySelector(":scope > .earlier");
    if (!target) return;
    const messages = page.messages || [];
    const nodes = transcriptItems(messages, notes).map((item) =>
      renderMessage(item.message, item.tools),
    );
    target.after(...nodes);
    if (page.earlier && messages.length) target.replaceWith(renderEarlier(page.earlier, earlierUrl(messages[0].id)));
    else target.remove();
  } catch {
    button.disabled = false;
    notify("Could not load the earlier messages.");
  }
});

// -- model choice and forks (the REST API, signed in by the session) -----------------------

const modelForm = document.getElementById("model-form");
const csrfToken = document.querySelector("input[name=csrfmiddlewaretoken]")?.value || "";

/** A write to the REST API (`path` under this conversation's resource, or an absolute URL);
 * the parsed answer, or throws its message. */
async function apiWrite(method, path, body) {
  const url = path.startsWith("/") ? path : `${root.dataset.apiUrl}${path}`;
  const response = await fetch(url, {
    method,
    credentials: "same-origin",
    headers: { "Content-Type": "application/json", Accept: "application/json", "X-CSRFToken": csrfToken },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const answer = await response.json().catch(() => ({}));
  if (!response.ok) {
    const errors = Object.values(answer.errors || {}).flat();
    throw new Error(errors[0] || answer.detail || `The server answered ${response.status}.`);
  }
  return answer;
}

if (modelForm) {
  // What is stored: a refused choice puts the control back.
  const valueOf = (control) => (control.type === "checkbox" ? control.checked : control.value);
  const chosen = new Map([...modelForm.elements].map((control) => [control.name, valueOf(control)]));
  modelForm.addEventListener("change", async (event) => {
    const control = event.target;
    const value = valueOf(control);
    try {
      await apiWrite("PATCH", "", { [control.name]: value });
      chosen.set(control.name, value);
      if (control.type === "checkbox") {
        notify(value ? "Read-only: tools may read, not write." : "Tools may write again.", "info");
      } else {
        const label = control.selectedOptions[0]?.textContent || control.value;
        notify(`The next answers use ${control.name === "model" ? "the model" : "thinking"}: ${label}.`, "info");
      }
    } catch (error) {
      if (control.type === "checkbox") control.checked = chosen.get(control.name);
      else control.value = chosen.get(control.name) || "";
      notify(error.message);
    }
  });
}

transcript.addEventListener("click", async (event) => {
  const button = event.target.closest(".msg-fork");
  if (!button) return;
  button.disabled = true;
  try {
    const fork = await apiWrite("POST", "fork/", { message: button.dataset.fork });
    window.location.assign(`/c/${encodeURIComponent(fork.id)}/`);
  } catch (error) {
    button.disabled = false;
    notify(error.message);
  }
});

// -- alternatives: regenerate an answer, edit a message, flip between them (`< 1/2 >`) -------

let branchPoints = []; // the state's `branches`: {point, message, index, count, error}
const userTexts = new Map(); // user message id -> its text, for the editor
// Frames after which the transcript's branch controls are laid out again.
const BRANCH_FRAMES = new Set(["state", "started", "committed", "finish", "error"]);

function showBranches(state) {
  branchPoints = state.branches || [];
  for (const message of state.messages || []) {
    if (message.role === "user" && message.id) userTexts.set(message.id, message.content);
  }
  layOutBranches();
}

function afterBranchFrame(frame) {
  if (frame.message?.role === "user") userTexts.set(frame.message.id, frame.message.content);
  for (const message of frame.messages || []) {
    if (message.role === "user") userTexts.set(message.id, message.content);
  }
  layOutBranches();
  // A refused edit (a reply is running) can be sent again.
  if (frame.type === "error") {
    for (const button of transcript.querySelectorAll(".msg-editor [data-testid=edit-send]")) button.disabled = false;
  }
}

/** Put the `< i/n >` switches, the Edit buttons and the latest answer's Regenerate in place. */
function layOutBranches() {
  const stale = ":scope > .msg > .branch-nav, :scope > .msg > .msg-regenerate, :scope > .msg > .msg-edit";
  for (const node of transcript.querySelectorAll(stale)) node.remove();
  const items = topItems().filter((li) => li.classList.contains("msg") && li.dataset.messageId);
  const byId = new Map(items.map((li) => [li.dataset.messageId, li]));
  for (const branch of branchPoints) {
    // On the chosen alternative's first message: the one after the point, once it has one
    // (a new answer committed since the state came); until then, under the point.
    const point = byId.get(branch.point);
    const next = point ? items[items.indexOf(point) + 1] : null;
    const first = byId.get(branch.message) || next;
    const shown = first ? { ...branch, message: first.dataset.messageId } : branch;
    const li = first || point;
    if (li) li.append(renderBranchNav(shown));
  }
  for (const li of items) {
    if (li.dataset.role === "user") li.append(messageAction("edit", li.dataset.messageId, "Edit"));
  }
  const last = items[items.length - 1];
  const streaming = Boolean(live && !live.settled);
  if (last && last.dataset.role === "assistant" && !streaming && !last.classList.contains("is-live")) {
    last.append(messageAction("regenerate", last.dataset.messageId, "Regenerate"));
  }
}

function openEditor(li, messageId) {
  if (li.querySelector(":scope > .msg-editor")) return;
  const body = li.querySelector(":scope > .msg-body");
  const editor = renderEditor(messageId, userTexts.get(messageId) ?? body?.textContent ?? "");
  if (body) body.hidden = true;
  li.querySelector(":scope > .msg-role").after(editor);
  const field = editor.querySelector("textarea");
  field.focus();
  field.setSelectionRange(field.value.length, field.value.length);
}

function closeEditor(editor) {
  const body = editor.parentElement?.querySelector(":scope > .msg-body");
  if (body) body.hidden = false;
  editor.remove();
}

transcript.addEventListener("click", (event) => {
  const step = event.target.closest(".branch-step");
  if (step && !step.disabled) {
    const frame = { type: "select_branch", point: step.dataset.point, index: Number(step.dataset.index) };
    if (!send(frame)) notify("Not connected right now; reconnecting…", "warning");
    return;
  }
  const cancel = event.target.closest(".msg-editor-cancel");
  if (cancel) {
    closeEditor(cancel.closest(".msg-editor"));
    return;
  }
  const action = event.target.closest("[data-action]");
  if (!action) return;
  if (action.dataset.action === "edit") {
    openEditor(action.closest(".msg"), action.dataset.message);
  } else if (action.dataset.action === "regenerate") {
    if (send({ type: "regenerate", message: action.dataset.message })) action.disabled = true;
    else notify("Not connected right now; reconnecting…", "warning");
  }
});

transcript.addEventListener("submit", (event) => {
  const editor = event.target.closest(".msg-editor");
  if (!editor) return;
  event.preventDefault();
  const content = editor.querySelector("textarea").value.trim();
  if (!content) return;
  if (!send({ type: "edit", message: editor.dataset.message, content })) {
    notify("Not connected right now; your edit is still in the box. Reconnecting…", "warning");
    return;
  }
  // The `branches` frame that follows brings the new alternative (and this editor goes).
  editor.querySelector("[data-testid=edit-send]").disabled = true;
});

transcript.addEventListener("keydown", (event) => {
  const field = event.target.closest(".msg-editor-input");
  if (!field) return;
  if (event.key === "Escape") closeEditor(field.closest(".msg-editor"));
  else if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    field.form.requestSubmit();
  }
});

// -- start ----------------------------------------------------------------------------------

const workspace = new WorkspacePanel(root, notify);
const initial = JSON.parse(document.getElementById("chat-state").textContent);
renderState(initial);
markAnswer();
autosize();
// A conversation opens at its latest message.
jumpToLatest();
socket.connect();
// Exported for debugging in the console and for browser tests.
window.orkestrelChat = { tracker, get live() { return live; }, renderToolCard };
