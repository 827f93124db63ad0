// senpi's session API driven as an embedder does (this project's own code): node session_api.mjs
// PACKAGE_DIR AGENT_DIR CWD PROVIDER_EXTENSION PROMPT... Services (extensions of the agent dir and
// the provider extension, settings) come from senpi's createAgentSessionServices; the session is an
// `AgentSession` built on senpi's `Agent` over a new session file, as senpi's own session harness
// builds it (createAgentSession would first write model_change and thinking_level_change entries,
// as the CLI does). Each prompt is sent in turn; prints one JSON line: the session's events that
// tell compaction and replies, and its branch's entries (type, custom type, message role).
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [pkg, agentDir, cwd, provider, ...prompts] = process.argv.slice(2);
const load = (path) => import(pathToFileURL(join(pkg, path)).href);
const senpi = await load("dist/index.js");
const { Agent } = await load("node_modules/@earendil-works/pi-agent-core/dist/index.js");

const services = await senpi.createAgentSessionServices({
    cwd, agentDir, resourceLoaderOptions: { additionalExtensionPaths: [provider] },
});
const sessionManager = senpi.SessionManager.create(cwd, join(agentDir, "sessions"));
const model = services.modelRuntime.getModel("ovf", "ovf-1");
const extensionRunnerRef = {};
const agent = new Agent({
    initialState: { systemPrompt: "", model, thinkingLevel: "off", tools: [] },
    convertToLlm: senpi.convertToLlm,
    streamFn: (m, context, options) => services.modelRuntime.streamSimple(m, context, options),
    transformContext: async (messages) => {
        const runner = extensionRunnerRef.current;
        return runner?.isActive ? runner.emitContext(messages) : messages;
    },
    sessionId: sessionManager.getSessionId(),
});
const session = new senpi.AgentSession({
    agent, sessionManager, cwd, agentDir, extensionRunnerRef, settingsManager: services.settingsManager,
    resourceLoader: services.resourceLoader, modelRuntime: services.modelRuntime, modelRegistry: services.modelRegistry,
});
await session.bindExtensions({});
const events = [];
session.subscribe((event) => {
    if (event.type === "compaction_start" || event.type === "compaction_end") {
        events.push({ type: event.type, reason: event.reason, error: event.errorMessage ?? null });
    } else if (event.type === "message_end" && event.message.role === "assistant") {
        events.push({ type: "reply", stop: event.message.stopReason, error: event.message.errorMessage ?? null });
    }
});
for (const text of prompts) {
    try {
        await session.prompt(text);
    } catch (error) {
        events.push({ type: "prompt_failed", error: String(error?.message ?? error) });
    }
}
const entries = sessionManager.getBranch().map((entry) => ({
    type: entry.type, customType: entry.customType ?? null, role: entry.message?.role ?? null,
    data: entry.customType === "senpi-guard.sent" ? entry.data : null,
}));
process.stdout.write(JSON.stringify({ events, entries, model: model ? `${model.provider}/${model.id}` : null }) + "\n");
session.dispose();
process.exit(0); // (builtin extensions keep timers; an embedder's process decides when it ends)
