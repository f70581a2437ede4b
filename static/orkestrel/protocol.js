// @ts-check
// Frame ordering for the live-chat websocket (see README, "Live chat: the websocket protocol").
// Pure logic, no DOM: every frame of a run carries `run` and `seq` (1, 2, 3, ... without gaps).
// The tracker says whether to apply a frame, skip it (already covered by a `state` frame, or a
// late frame of a settled run), or resync (a gap: frames were lost, rebuild from `state`).

export const APPLY = "apply";
export const SKIP = "skip";
export const GAP = "gap";

export class RunTracker {
  constructor() {
    this.run = null; // the run whose frames we follow (a string), or null
    this.seq = 0; // the last applied seq of that run
    this.awaiting = false; // a resync was asked for: ignore run frames until `state`
    this.settled = new Set(); // runs that finished: their stragglers are skipped
  }

  /** Start over from a `state` frame's `run` (null or {id, seq, ...}). */
  reset(run) {
    this.awaiting = false;
    if (run) {
      this.run = String(run.id);
      this.seq = Number(run.seq) || 0;
      this.settled.delete(this.run);
    } else {
      this.run = null;
      this.seq = 0;
    }
  }

  /** Classify a frame: APPLY, SKIP or GAP (after GAP, send a `resync`). */
  accept(frame) {
    const hasRun = frame.run !== undefined && frame.run !== null;
    const hasSeq = typeof frame.seq === "number";
    if (!hasRun || !hasSeq) return APPLY; // `state`, and errors about a rejected frame
    if (this.awaiting) return SKIP;
    const run = String(frame.run);
    if (this.settled.has(run)) return SKIP;
    if (run !== this.run) {
      if (frame.seq === 1) {
        this.run = run;
        this.seq = 1;
        return APPLY;
      }
      this.awaiting = true;
      return GAP;
    }
    if (frame.seq <= this.seq) return SKIP;
    if (frame.seq !== this.seq + 1) {
      this.awaiting = true;
      return GAP;
    }
    this.seq = frame.seq;
    return APPLY;
  }

  /** Mark a run settled (after its `finish`). */
  settle(run) {
    if (run === undefined || run === null) return;
    this.settled.add(String(run));
    if (this.run === String(run)) this.run = null;
  }
}
