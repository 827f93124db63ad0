const __testPromptTextConfig = /*senpi-guard:config*/{}/*senpi-guard:config-end*/;
function __testPromptText(text) {
    return text;
}
