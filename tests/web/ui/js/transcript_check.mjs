// Checks transcriptItems() of static/orkestrel/render.js under Node: how a `state` frame's
// tool messages become card results, errors and denials; and progressText() of tool_cards.js
// beside it, a delegated child's progress as its card words it. Run by
// tests/web/ui/test_static.py.
import assert from "node:assert/strict";
import { pathToFileURL } from "node:url";

// Imported from its file: render.js imports markdown.js and the vendored libraries beside it.
const rendering = pathToFileURL(process.argv[2]);
const { transcriptItems } = await import(rendering.href);
const { progressText } = await import(new URL("tool_cards.js", rendering).href);

const messages = [
  { id: "u", role: "user", content: "go", calls: null },
  {
    id: "a",
    role: "assistant",
    content: "",
    calls: [
      { id: "ok", name: "workspace", arguments: {} },
      { id: "bad", name: "http_fetch", arguments: {} },
      { id: "no", name: "shell", arguments: {} },
    ],
  },
  { id: "t1", role: "tool", content: '["a.txt"]', tool_call_id: "ok" },
  { id: "t2", role: "tool", content: '"connection refused"', tool_call_id: "bad" },
  { id: "t3", role: "tool", content: "denied: no shell", tool_call_id: "no" },
];

const cases = {
  "a result, a failure and a denial each land on their card"() {
    const denials = { no: { reason: "no shell", rule: "#1" } };
    const items = transcriptItems(messages, { denials, failures: new Set(["bad"]), displays: {} });
    assert.deepEqual(
      items.map((item) => item.message.id),
      ["u", "a"],
    );
    const [ok, bad, no] = items[1].tools;
    assert.equal(ok.result, '["a.txt"]');
    assert.equal(ok.error, undefined);
    assert.equal(bad.error, '"connection refused"');
    assert.equal(bad.result, undefined);
    assert.equal(no.error, "denied: no shell");
    assert.equal(no.denied, true);
  },
  "a display lands on its call's card, and only there"() {
    const [ok, bad] = transcriptItems(messages, { displays: { ok: "--- a\n+++ b" } })[1].tools;
    assert.equal(ok.display, "--- a\n+++ b");
    assert.equal(bad.display, undefined);
  },
  "without failures every undenied tool message is a result"() {
    const [, bad] = transcriptItems(messages)[1].tools;
    assert.equal(bad.result, '"connection refused"');
  },
  "a child's progress reads as steps, tool calls and tokens, leaving out what is zero"() {
    const progress = { turns: 3, tools: 1, last_tool: "workspace", tokens: 1234, text: "so far" };
    assert.equal(progressText(progress), "3 steps, 1 tool call, 1.2k tokens");
    assert.equal(progressText({ turns: 1, tools: 0, tokens: 950 }), "1 step, 950 tokens");
    assert.equal(progressText({ turns: 0, tools: 0, tokens: 0 }), "");
    assert.equal(progressText(undefined), "");
  },
};

for (const [name, check] of Object.entries(cases)) {
  try {
    check();
  } catch (error) {
    console.error(`FAILED: ${name}\n${error.stack}`);
    process.exit(1);
  }
}
console.log(`ok ${Object.keys(cases).length} cases`);
