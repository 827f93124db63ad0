const SDK_NAMES = { read: "Read", write: "Write", edit: "Edit", bash: "Bash", grep: "Grep", find: "Glob", glob: "Glob" };
export function toSdkToolName(name, customNames) {
    const lower = String(name).toLowerCase();
    return customNames?.get(name) ?? customNames?.get(lower) ?? SDK_NAMES[lower] ?? String(name);
}
export function describeToolCall(call, customNames) {
    const args = call.arguments === undefined ? "{}" : JSON.stringify(call.arguments);
    return `[called ${toSdkToolName(call.name, customNames)} id=${call.id}] ${args}`;
}
export function toolResultLabel(message, customNames) {
    return `TOOL RESULT (historical ${toSdkToolName(message.toolName, customNames)}, id=${message.toolCallId}):\n`;
}
export function partsOf(content) {
    if (typeof content === "string") {
        return [{ type: "text", text: content }];
    }
    return Array.isArray(content) ? content : [];
}
//# sourceMappingURL=tools.js.map
