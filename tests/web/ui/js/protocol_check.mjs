// Checks static/orkestrel/protocol.js (the frame-ordering rules) under Node, without a browser.
// Run by tests/web/ui/test_static.py; exits non-zero with a message on the first failure.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";

const source = readFileSync(process.argv[2], "utf8");
const { APPLY, GAP, SKIP, RunTracker } = await import(
  `data:text/javascript;base64,${Buffer.from(source).toString("base64")}`
);

const cases = {
  "frames of a run apply in order and duplicates are skipped"() {
    const t = new RunTracker();
    assert.equal(t.accept({ type: "started", run: 7, seq: 1 }), APPLY);
    assert.equal(t.accept({ type: "token", run: 7, seq: 2 }), APPLY);
    assert.equal(t.accept({ type: "token", run: 7, seq: 2 }), SKIP);
    assert.equal(t.accept({ type: "token", run: 7, seq: 3 }), APPLY);
  },
  "a gap asks for a resync and later frames wait for the state"() {
    const t = new RunTracker();
    t.accept({ type: "started", run: 7, seq: 1 });
    assert.equal(t.accept({ type: "token", run: 7, seq: 3 }), GAP);
    assert.equal(t.accept({ type: "token", run: 7, seq: 4 }), SKIP);
    assert.equal(t.accept({ type: "state", run: { id: 7, seq: 4 } }), APPLY);
    t.reset({ id: 7, seq: 4 });
    assert.equal(t.accept({ type: "token", run: 7, seq: 4 }), SKIP);
    assert.equal(t.accept({ type: "token", run: 7, seq: 5 }), APPLY);
  },
  "joining mid-run continues after the state's seq"() {
    const t = new RunTracker();
    t.reset({ id: "r1", seq: 10, content: "abc" });
    assert.equal(t.accept({ type: "token", run: "r1", seq: 9 }), SKIP);
    assert.equal(t.accept({ type: "token", run: "r1", seq: 10 }), SKIP);
    assert.equal(t.accept({ type: "token", run: "r1", seq: 11 }), APPLY);
  },
  "an unknown run that does not start at 1 is a gap"() {
    const t = new RunTracker();
    assert.equal(t.accept({ type: "token", run: 3, seq: 5 }), GAP);
  },
  "a new run after a settled one starts fresh; the old run's stragglers are skipped"() {
    const t = new RunTracker();
    t.accept({ type: "started", run: 1, seq: 1 });
    t.accept({ type: "finish", run: 1, seq: 2 });
    t.settle(1);
    assert.equal(t.accept({ type: "token", run: 1, seq: 3 }), SKIP);
    assert.equal(t.accept({ type: "started", run: 2, seq: 1 }), APPLY);
    assert.equal(t.accept({ type: "token", run: 2, seq: 2 }), APPLY);
  },
  "frames without a run (state, rejected-frame errors) always apply"() {
    const t = new RunTracker();
    t.accept({ type: "started", run: 1, seq: 1 });
    t.accept({ type: "token", run: 1, seq: 5 }); // gap: awaiting state
    assert.equal(t.accept({ type: "error", code: "busy", message: "busy" }), APPLY);
    assert.equal(t.accept({ type: "state", run: null }), APPLY);
  },
  "run ids compare as strings"() {
    const t = new RunTracker();
    t.reset({ id: 12, seq: 2 });
    assert.equal(t.accept({ type: "token", run: "12", seq: 3 }), APPLY);
  },
};

for (const [name, check] of Object.entries(cases)) {
  try {
    check();
  } catch (error) {
    console.error(`FAIL: ${name}\n${error.stack}`);
    process.exit(1);
  }
}
console.log(`ok ${Object.keys(cases).length}`);
