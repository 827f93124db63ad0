const __testPromptBlocksConfig = /*senpi-guard:config*/{}/*senpi-guard:config-end*/;
function __testPromptBlocks(blocks) {
    return blocks;
}
