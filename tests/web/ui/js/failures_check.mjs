// Checks static/orkestrel/failures.js under Node: the server's failure texts become one plain
// sentence each, the retries are counted, the technical text is kept apart. Run by
// tests/web/ui/test_failures.py.
import assert from "node:assert/strict";
import { pathToFileURL } from "node:url";

const { describeFailure, retriesText, stopSentence } = await import(pathToFileURL(process.argv[2]).href);

const cases = {
  "a stream cut mid-answer, retried twice"() {
    const message = "fake-upstream/m: connection broken mid-stream (ReadError)";
    const failure = describeFailure(message, 2);
    assert.equal(failure.sentence, "The model server stopped answering mid-reply; retried twice.");
    assert.equal(failure.detail, message);
  },
  "each kind of failure has its own sentence"() {
    const said = (message) => describeFailure(message).sentence;
    assert.equal(said("up/m: the model server answered HTTP 500 (internal server error)"), "The model server had an internal error.");
    assert.equal(said("up/m: the model server answered HTTP 401 (unauthorized)"), "The model server refused the agent's credentials; an operator needs to check its endpoint.");
    assert.equal(said("up/m: the model server reported an error mid-stream"), "The model server reported an error mid-reply.");
    assert.equal(said("up/m: cannot connect to the model server (connection refused)"), "The model server could not be reached.");
    assert.equal(said("up/m: stream stalled: the model stopped sending for 30 s"), "The model server went quiet mid-reply, so the answer was ended.");
    assert.equal(said("something nobody foresaw"), "The model did not answer.");
    assert.equal(said(""), "The model did not answer.");
  },
  "retries are counted in words"() {
    assert.deepEqual([0, 1, 2, 3].map(retriesText), ["", "retried once", "retried twice", "retried 3 times"]);
  },
  "a stop says why, and that the text is kept"() {
    assert.equal(stopSentence("stopped by user"), "Stopped. What was written so far is kept.");
    assert.equal(stopSentence("abort"), "Stopped. What was written so far is kept.");
    assert.equal(stopSentence("timeout"), "Stopped: the answer ran past the agent's time limit. What was written so far is kept.");
  },
};

for (const [name, check] of Object.entries(cases)) {
  try {
    check();
  } catch (error) {
    console.error(`failed: ${name}\n${error.message}`);
    process.exit(1);
  }
}
console.log(`ok ${Object.keys(cases).length} checks`);
