// @ts-check
// The chat page: the websocket client of README's "Live chat" protocol, and the one place its
// parts meet (each part is a class with its own state: the transcript, the answer streaming,
// the composer, the status line, the header, approvals, the workspace).
//
// The server owns every run: this page only renders. On every (re)connect the server sends a
// `state` frame and the transcript is rebuilt from it; a run in flight continues from
// `state.run`, and live frames are applied in `seq` order (a gap asks for a fresh `state`).
// Nothing here depends on timers firing on time (background tabs throttle them): frames are
// rendered as they arrive, and only the reconnect backoff waits.

import { AnswerModels } from "./answered.js";
import { ChatApi } from "./api.js";
import { ApprovalPanel } from "./approvals.js";
import { Branches } from "./branches.js";
import { Composer } from "./composer.js";
import { describeFailure, stopSentence } from "./failures.js";
import { ChatHeader } from "./header.js";
import { JumpToLatest } from "./jump.js";
import { LiveRun } from "./live.js";
import { McpOfferings } from "./mcp_offerings.js";
import { Meters } from "./meters.js";
import { Notices } from "./notices.js";
import { PendingBox } from "./pending.js";
import { APPLY, GAP, RunTracker } from "./protocol.js";
import { renderMessage, setMessagesUrl } from "./render.js";
import { ChatSocket } from "./socket.js";
import { RunStatus } from "./status.js";
import { renderToolCard, showDecision } from "./tool_cards.js";
import { ToolsReadout } from "./tools.js";
import { Transcript } from "./transcript.js";
import { WorkspacePanel } from "./workspace.js";

const ERROR_TEXT = {
  busy: "A reply is still running. Wait for it to finish, or stop it.",
  nothing_to_continue: "There is nothing to continue yet: say something first.",
  too_large: "That message is too large to send.",
  invalid: "The server could not read that request.",
  unknown_type: "The server did not understand that request.",
  unknown_skill: "There is no skill of that name.",
};
// A `/skill name` is answered with one of these notices (or an `unknown_skill` error).
const SKILL_NOTICES = new Set(["skill_activated", "skill_active"]);
// Errors that refuse a `send`: the message was not accepted, so its text goes back in the box.
const REJECTED = new Set(["busy", "too_large", "invalid", "unknown_type", "no_profile", "nothing_to_continue"]);
// Errors that refuse an `approve`: its buttons work again.
const APPROVAL_ERRORS = new Set(["invalid", "decided", "operator", "not_found", "answered"]);
// Errors that answer a compaction asked for: its status line says how it ended.
const COMPACTION_ERRORS = new Set(["nothing_to_compact", "compaction_failed"]);
// Frames after which the transcript's branch controls are laid out again.
const BRANCH_FRAMES = new Set(["state", "started", "committed", "finish", "error"]);

/** @param {string} id */
function byId(id) {
  return /** @type {HTMLElement} */ (document.getElementById(id));
}

class ChatPage {
  /** @param {HTMLElement} root the `#chat` element */
  constructor(root) {
    this.root = root;
    this.tracker = new RunTracker();
    /** The run being streamed. @type {LiveRun | null} */
    this.live = null;
    this.retries = 0; // the model server's retries in the run being streamed
    this.compacting = false; // a compaction was asked for and has not ended
    this.connectedBefore = false;
    this.firstState = true; // the next `state` is the first on this socket

    const send = (frame) => this.socket.send(frame);
    const csrf = /** @type {HTMLInputElement | null} */ (document.querySelector("input[name=csrfmiddlewaretoken]"));
    this.api = new ChatApi(root.dataset.apiUrl, csrf?.value || "");
    this.notices = new Notices(byId("notices"));
    const notify = (message, kind = "error") => this.notices.notify(message, kind);
    setMessagesUrl(root.dataset.messagesUrl);
    this.transcript = new Transcript(/** @type {HTMLOListElement} */ (byId("transcript")), byId("transcript-empty"), {
      api: this.api,
      notify,
      sectionsUrl: root.dataset.sectionsUrl,
      messagesUrl: root.dataset.messagesUrl,
    });
    this.status = new RunStatus(byId("turn-note"), (run) => this.api.write("POST", `/api/runs/${encodeURIComponent(run)}/retry/`), notify);
    this.header = new ChatHeader(/** @type {HTMLElement} */ (root.querySelector(".chat-header")), this.api, notify);
    this.meters = new Meters(/** @type {HTMLElement} */ (document.querySelector("[data-testid=usage]")), /** @type {HTMLElement} */ (document.querySelector("[data-testid=context-meter]")));
    this.jump = new JumpToLatest(/** @type {HTMLButtonElement} */ (byId("jump-latest")), this.transcript);
    this.pendingBox = new PendingBox(byId("pending-box"), send, notify);
    this.approvals = new ApprovalPanel({ send, notify, before: byId("pending-box") });
    this.branches = new Branches(this.transcript.list, send, notify);
    this.models = new AnswerModels(this.transcript.list);
    this.composer = new Composer(root, {
      send,
      notify,
      reconnect: () => this.socket.reconnectNow(),
      compact: (focus) => this.compact(focus),
      editLast: () => this.branches.editLast(),
      answering: () => Boolean(this.live),
      show: (li) => {
        this.transcript.list.append(li);
        this.markAnswer();
      },
    });
    this.mcp = new McpOfferings(this.composer.slashMenu, this.composer.input, this.api, notify, this.composer.form);
    this.workspace = new WorkspacePanel(root, notify);
    const tools = document.getElementById("chat-tools");
    if (tools instanceof HTMLDetailsElement) this.tools = new ToolsReadout(tools, this.api);
    const compactForm = byId("compact-form");
    const compactFocus = /** @type {HTMLInputElement} */ (byId("compact-focus"));
    compactForm.addEventListener("submit", (event) => {
      event.preventDefault();
      if (this.compact(compactFocus.value.trim())) compactFocus.value = "";
    });
    this.connection = byId("connection");
    this.socket = new ChatSocket(root.dataset.socketPath, {
      onOpen: () => {
        this.firstState = true;
      },
      onFrame: (frame) => this.handle(frame),
      onStatus: (state, text) => {
        this.connection.dataset.state = state;
        this.connection.textContent = text;
      },
      onUnauthenticated: () => window.location.assign(root.dataset.loginUrl),
    });
  }

  /** Render the page's embedded state, focus the composer, connect. */
  start() {
    this.renderState(JSON.parse(byId("chat-state").textContent));
    this.markAnswer();
    this.composer.autosize();
    // A conversation opens at its latest message, ready to type (unless a call waits: its
    // Approve has the focus).
    this.jump.jump();
    if (this.approvals.box.hidden) this.composer.focus();
    this.socket.connect();
  }

  markAnswer() {
    this.transcript.markAnswer(this.live ? this.live.answerBody() : null);
  }

  /** Ask for a compaction (`focus`: what the summary should keep); whether it was sent. */
  compact(focus) {
    const frame = focus ? { type: "compact", focus } : { type: "compact" };
    if (!this.socket.send(frame)) {
      this.notices.notify("Not connected right now; reconnecting…", "warning");
      this.socket.reconnectNow();
      return false;
    }
    this.compacting = true;
    this.status.compacting();
    return true;
  }

  renderState(state) {
    this.transcript.render(state);
    if (!state.run) this.status.unfinished(state.last_run);
    else this.status.hide();
    this.header.showSkills(state.conversation?.skills || []);
    this.showPending(state.pending || []);
    this.approvals.show(state.approvals || []);
    this.approvals.showQuestions(state.questions || []);
    this.approvals.showInputs(state.run?.inputs || []);
    this.meters.usage(state.usage);
    this.meters.context(state.context);
    this.branches.fromState(state, this.streaming());
    this.models.show(state.models);
  }

  streaming() {
    return Boolean(this.live && !this.live.settled);
  }

  /** Show the messages the server holds for the next run (our own bubbles for them go). */
  showPending(messages) {
    for (const message of messages) this.composer.accepted(message.nonce)?.li.remove();
    this.pendingBox.show(messages);
  }

  startLive(runId) {
    if (this.live && this.live.id === String(runId)) return this.live;
    if (this.live && !this.live.settled) this.live.finish(null, null);
    this.live = new LiveRun(runId, this.transcript.list);
    this.retries = 0;
    this.composer.streaming(true);
    return this.live;
  }

  /** The run `runId` ended (or is no longer ours to show). */
  endLive(runId) {
    this.tracker.settle(runId);
    this.live = null;
    this.composer.streaming(false);
  }

  resumeRun(run) {
    const live = this.startLive(run.id);
    if (run.thinking) live.think(run.thinking);
    for (const tool of run.tools || []) {
      // Tools committed before the state was read already have their card.
      const id = tool.call?.id;
      if (id && this.transcript.list.querySelector(`.tool-card[data-call-id="${CSS.escape(id)}"]`)) continue;
      live.tool(tool);
    }
    if (run.content) live.token(run.content);
    // Calls still running: their cards, clocks and latest reports.
    for (const entry of run.running || []) live.running(entry);
  }

  /** The run's text flows again: a retry that worked needs no word any more. */
  flowing(frame) {
    this.status.settle("retrying");
    return this.startLive(frame.run);
  }

  handle(frame) {
    if (!frame || typeof frame.type !== "string") return;
    let reconnected = false;
    if (frame.type === "state") {
      reconnected = this.firstState && this.connectedBefore;
      this.firstState = false;
      this.connectedBefore = true;
    }
    const verdict = this.tracker.accept(frame);
    if (verdict === GAP) {
      this.socket.send({ type: "resync" });
      return;
    }
    if (verdict !== APPLY) return;
    const handler = this.handlers[frame.type];
    if (!handler) return;
    // Whether the end was in view is read once per animation frame, before that frame's
    // frames change the page: a streaming answer brings a frame per delta, and each read
    // of the layout after a change would lay the whole transcript out again.
    if (this.nearBeforeFrames === null) this.nearBeforeFrames = this.transcript.nearBottom();
    handler.call(this, frame, reconnected);
    this.markAnswer();
    if (BRANCH_FRAMES.has(frame.type)) this.branches.afterFrame(frame, this.streaming());
    this.followSoon(frame.type !== "state");
  }

  /** Keep the newest message in view if it was, unless a held call waits for the eye. */
  follow(wasNear) {
    if (wasNear && this.approvals.box.hidden) this.transcript.scrollToEnd();
  }

  /** At the next animation frame (after the answer's markdown is rendered in it), `follow`
   * if any frame since the last asked to, and update "Jump to latest". */
  followSoon(follow) {
    this.followAsked ||= follow;
    if (this.followScheduled) return;
    this.followScheduled = true;
    requestAnimationFrame(() => {
      const wasNear = Boolean(this.nearBeforeFrames);
      const asked = this.followAsked;
      this.followScheduled = false;
      this.followAsked = false;
      this.nearBeforeFrames = null;
      if (asked) this.follow(wasNear);
      this.jump.update();
    });
  }

  /** @type {boolean | null} whether the end was in view before this animation frame's frames */
  nearBeforeFrames = null;
  followAsked = false;
  followScheduled = false;

  /** @type {Record<string, (this: ChatPage, frame: any, reconnected?: boolean) => void>} */
  handlers = {
    state(frame, reconnected) {
      const wasNear = this.transcript.nearBottom();
      this.live = null;
      this.renderState(frame);
      // The transcript now holds the server's state (tests and tools wait on this).
      this.transcript.list.dataset.synced = "true";
      this.tracker.reset(frame.run);
      if (frame.run) this.resumeRun(frame.run);
      else this.composer.streaming(false);
      this.composer.reconcile(frame, reconnected);
      this.workspace.refresh();
      this.follow(wasNear);
    },
    started(frame) {
      this.status.hide();
      const entry = this.composer.accepted(frame.nonce);
      if (frame.message && !this.transcript.hasMessage(frame.message.id)) {
        const li = renderMessage(frame.message);
        if (entry && entry.li.isConnected) entry.li.replaceWith(li);
        else this.transcript.list.append(li);
      } else if (entry) {
        entry.li.remove();
      }
      this.header.retitle(frame.title);
      this.startLive(frame.run);
    },
    token(frame) {
      this.flowing(frame).token(frame.content || "");
    },
    think(frame) {
      this.flowing(frame).think(frame.content || "");
    },
    block_end(frame) {
      if (frame.block === "thinking") this.startLive(frame.run).thought(frame.seconds);
    },
    tool_call(frame) {
      this.flowing(frame).callDelta(frame);
    },
    tool_execute(frame) {
      this.startLive(frame.run).execute(frame);
    },
    tool_progress(frame) {
      this.startLive(frame.run).progress(frame);
    },
    tool(frame) {
      this.startLive(frame.run).tool(frame);
      this.transcript.note(frame);
      const name = frame.call?.name || "";
      if (name === "workspace" || name.startsWith("workspace_")) this.workspace.refresh();
    },
    usage(frame) {
      if (frame.total) this.meters.usage(frame.total);
      else if (frame.usage) this.meters.add(frame.usage);
      this.meters.context(frame.context);
    },
    compaction(frame) {
      this.transcript.compaction(frame.section);
      if (this.compacting || frame.run === null || frame.run === undefined) {
        this.compacting = false;
        this.status.compacted(frame.section?.count || frame.section?.messages?.length || 0);
      }
    },
    committed(frame) {
      const messages = (frame.messages || []).filter((message) => !this.transcript.hasMessage(message.id));
      this.transcript.appendMessages(this.live ? this.live.commit(messages) : messages);
    },
    abort(frame) {
      if (this.live && this.live.id === String(frame.run)) this.live.aborted = frame.reason || "stopped";
    },
    exhaust(frame) {
      if (this.live && this.live.id === String(frame.run)) this.live.exhausted = frame.limit;
    },
    approval(frame) {
      this.approvals.show(frame.approvals || []);
      if (frame.decided) showDecision(this.transcript.list, frame.decided);
    },
    question(frame) {
      this.approvals.showQuestions(frame.questions || []);
    },
    input(frame) {
      this.approvals.showInputs(frame.requests || []);
    },
    branches(frame) {
      // The chosen branch changed (here or in another tab): the messages shown did too.
      this.branches.replace(frame.branches);
      this.socket.send({ type: "resync" });
    },
    skills(frame) {
      this.header.showSkills(frame.skills || []);
    },
    pending(frame) {
      this.showPending(frame.messages || []);
      // Taken back: the texts into the box (after what it holds), the images as attachments.
      this.composer.takeBack(frame.taken, frame.attachments);
    },
    notice(frame) {
      if (frame.code === "compaction_failed" && this.compacting) {
        this.compacting = false;
        this.status.notCompacted(frame.code, frame.message);
        return;
      }
      const fallback = "Something did not work as expected; the answer goes on.";
      this.notices.notify(frame.message || fallback, SKILL_NOTICES.has(frame.code) ? "info" : "warning");
    },
    wait(frame) {
      this.retries += 1;
      this.status.retrying(frame.status, frame.seconds, this.retries);
    },
    finish(frame) {
      const result = frame.result || {};
      const run = this.live && this.live.id === String(frame.run) ? this.live : null;
      let note = null;
      if (result.stop === "abort" || run?.aborted) note = stopSentence(run?.aborted);
      else if (result.stop === "exhaust" || run?.exhausted !== undefined) note = stopSentence("exhaust");
      else if (result.stop === "interrupted") note = stopSentence("interrupted");
      if (run) run.finish(result, note, note ? "stopped" : null);
      if (run && result.model) for (const turn of run.turns) this.models.label(turn.li, result);
      this.meters.usage(null, result.usage);
      this.status.settle("retrying");
      if (result.partial) {
        // A run whose server process died ends on a finish too: say so, as a reload would.
        const status = result.stop === "interrupted" ? "interrupted" : "partial";
        this.status.unfinished({ id: frame.run, status, stop_reason: run?.aborted || result.stop });
      }
      // The meter follows the history even when the model reported no usage (a stopped turn).
      this.meters.context(frame.context);
      this.tracker.settle(frame.run);
      if (run) this.live = null;
      this.composer.streaming(false);
    },
    error(frame) {
      const code = frame.code;
      if (code === "duplicate") {
        // An accidental second submit: the first was taken, this one is dropped.
        this.composer.dropLast(false);
        return;
      }
      if (COMPACTION_ERRORS.has(code) && (this.compacting || frame.run == null)) {
        this.compacting = false;
        this.status.notCompacted(code, frame.message);
        return;
      }
      // An answer that does not fit a server's form: its form says why, and stays.
      if (code === "invalid_input" && this.approvals.inputRefused(frame.message)) return;
      if (code === "unknown_skill") this.composer.skillRefused();
      if (APPROVAL_ERRORS.has(code)) this.approvals.released();
      if (code === "run_failed" && frame.run !== undefined && frame.run !== null) {
        // The answer failed: the status line and the answer's mark say why, in plain words.
        this.status.failed(frame.run, frame.message, this.retries);
        if (this.live && this.live.id === String(frame.run)) {
          const { sentence } = describeFailure(frame.message, this.retries);
          this.live.finish(null, `This answer failed: ${sentence[0].toLowerCase()}${sentence.slice(1)}`, "failed");
          this.endLive(frame.run);
        }
        return;
      }
      // `busy` gets our wording; otherwise the server's message says what exactly was wrong.
      const fallback = ERROR_TEXT[code] || "Something went wrong.";
      this.notices.notify(code === "busy" ? ERROR_TEXT.busy : frame.message || fallback);
      if (REJECTED.has(code)) this.composer.dropLast(true); // refused: its text comes back
      if (code === "idle") this.composer.streaming(false); // nothing was running after all
      if (code === "run_failed" && this.live) {
        this.live.finish(null, "This answer failed: the server could not start it.", "failed");
        this.endLive(this.live.id);
      }
    },
  };
}

const page = new ChatPage(byId("chat"));
page.start();
// Exported for debugging in the console and for browser tests.
Object.assign(window, {
  orkestrelChat: {
    tracker: page.tracker,
    get live() {
      return page.live;
    },
    renderToolCard,
  },
});
