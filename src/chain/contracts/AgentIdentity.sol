// SPDX-License-Identifier: MIT
// A hire's "only a named agent" held on chain (docs/onchain.md, "ERC-8004: hire only a named
// agent"). Compiled to AgentIdentity.ts by scripts/compile-contracts.ts; deployed by LocalNetwork.ts.
pragma solidity 0.8.28;

interface IErc8004Identity {
    function getAgentWallet(uint256 agentId) external view returns (address);
}

interface IErc8004Reputation {
    function getSummary(uint256 agentId, address[] calldata clientAddresses, string calldata tag1, string calldata tag2)
        external
        view
        returns (uint64 count, int128 summaryValue, uint8 summaryValueDecimals);
}

/// AgentIdentityEnforcer: every redemption needs the named ERC-8004 agent still bound to the
/// provider's wallet and, when a floor is set, its reputation from the named clients at or above it.
///
/// terms: identityRegistry(20) ‖ agentId(32) ‖ provider(20) ‖ reputationRegistry(20) ‖
///        minValue(32, int256 with 18 decimals) ‖ client(20) × n.
/// reputationRegistry = 0 (and no clients): no reputation check. Otherwise n ≥ 1: the summary is
/// the registry's `getSummary(agentId, clients, "", "")` (revoked feedback left out), which must
/// count at least one feedback and average at least minValue. args: unused. Reads only: it holds
/// no state, so it never moves with the call it guards; a registry that reverts refuses the redemption.
contract AgentIdentityEnforcer {
    uint256 private constant HEAD = 124;

    function beforeAllHook(bytes calldata, bytes calldata, bytes32, bytes calldata, bytes32, address, address) external pure {}

    function beforeHook(bytes calldata _terms, bytes calldata, bytes32, bytes calldata, bytes32, address, address) external view {
        check(_terms);
    }

    function afterHook(bytes calldata, bytes calldata, bytes32, bytes calldata, bytes32, address, address) external pure {}

    function afterAllHook(bytes calldata, bytes calldata, bytes32, bytes calldata, bytes32, address, address) external pure {}

    /// Reverts with the reason a redemption would get now; returns when it would pass.
    function check(bytes calldata _terms) public view {
        require(_terms.length >= HEAD && (_terms.length - HEAD) % 20 == 0, "AgentIdentityEnforcer:invalid-terms-length");
        address identity = address(bytes20(_terms[0:20]));
        uint256 agentId = uint256(bytes32(_terms[20:52]));
        address provider = address(bytes20(_terms[52:72]));
        address reputation = address(bytes20(_terms[72:92]));
        int256 minValue = int256(uint256(bytes32(_terms[92:124])));
        require(IErc8004Identity(identity).getAgentWallet(agentId) == provider, "AgentIdentityEnforcer:agent-not-registered");
        uint256 n = (_terms.length - HEAD) / 20;
        if (reputation == address(0)) {
            require(n == 0, "AgentIdentityEnforcer:invalid-terms");
            return;
        }
        require(n > 0, "AgentIdentityEnforcer:no-clients");
        address[] memory clients = new address[](n);
        for (uint256 i = 0; i < n; i++) {
            clients[i] = address(bytes20(_terms[HEAD + i * 20:HEAD + i * 20 + 20]));
        }
        (uint64 count, int128 value, uint8 decimals) = IErc8004Reputation(reputation).getSummary(agentId, clients, "", "");
        require(count > 0, "AgentIdentityEnforcer:no-feedback");
        require(decimals <= 18, "AgentIdentityEnforcer:invalid-summary");
        require(int256(value) * int256(10 ** uint256(18 - decimals)) >= minValue, "AgentIdentityEnforcer:reputation-below-floor");
    }
}
