import { buildPromptBlocks } from "./prompt-bridge.js";
export function preparePrompt(context) {
    return buildPromptBlocks(context);
}
//# sourceMappingURL=stream.js.map
