const __testAffinityOrderConfig = /*senpi-guard:config*/{}/*senpi-guard:config-end*/;
function __testAffinityOrder(accounts) {
    return accounts;
}
