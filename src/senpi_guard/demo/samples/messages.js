// Agent messages -> the messages a provider is given.
const BRANCH_OPEN = "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n";
const BRANCH_CLOSE = "</summary>";
const COMPACTION_OPEN = "The conversation history before this point was compacted into the following summary:\n\n<summary>\n";
const COMPACTION_CLOSE = "\n</summary>";
function userText(text, timestamp) {
    return { role: "user", content: [{ type: "text", text }], timestamp };
}
export function bashExecutionToText(message) {
    let text = `Ran \`${message.command}\`\n`;
    text += message.output ? `\`\`\`\n${message.output}\n\`\`\`` : "(no output)";
    if (message.cancelled) {
        text += "\n\n(command cancelled)";
    }
    else if (message.exitCode !== null && message.exitCode !== undefined && message.exitCode !== 0) {
        text += `\n\nCommand exited with code ${message.exitCode}`;
    }
    if (message.truncated && message.fullOutputPath) {
        text += `\n\n[Output truncated. Full output: ${message.fullOutputPath}]`;
    }
    return text;
}
export function convertToLlm(messages) {
    const out = [];
    for (const message of messages) {
        switch (message.role) {
            case "bashExecution":
                if (!message.excludeFromContext) {
                    out.push(userText(bashExecutionToText(message), message.timestamp));
                }
                break;
            case "custom":
                out.push({ role: "user", content: typeof message.content === "string" ? [{ type: "text", text: message.content }] : message.content, timestamp: message.timestamp });
                break;
            case "branchSummary":
                out.push(userText(BRANCH_OPEN + message.summary + BRANCH_CLOSE, message.timestamp));
                break;
            case "compactionSummary":
                out.push(userText(COMPACTION_OPEN + message.summary + COMPACTION_CLOSE, message.timestamp));
                break;
            case "user":
            case "assistant":
            case "toolResult":
                out.push(message);
                break;
            default:
                break;
        }
    }
    return out;
}
//# sourceMappingURL=messages.js.map
