import { buildPromptBlocks } from "./prompt-bridge.js";
import { dedupeUltraworkBlocks } from "./prompt-directive-dedupe.js";
export function preparePrompt(context) {
    const { blocks } = dedupeUltraworkBlocks(buildPromptBlocks(context));
    return blocks;
}
//# sourceMappingURL=stream.js.map
