const __testPromptStreamConfig = /*senpi-guard:config*/{}/*senpi-guard:config-end*/;
function __testPromptStream(blocks) {
    return blocks;
}
