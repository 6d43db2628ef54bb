// SPDX-License-Identifier: MIT
// The panic key's caveat (docs/account.md, "The panic key"). Compiled to PanicFreeze.ts by
// scripts/compile-contracts.ts; deployed by LocalNetwork.ts.
pragma solidity 0.8.28;

/// A Delegation Framework caveat and delegation, as the DelegationManager takes them.
struct Caveat {
    address enforcer;
    bytes terms;
    bytes args;
}

struct Delegation {
    address delegate;
    address delegator;
    bytes32 authority;
    Caveat[] caveats;
    uint256 salt;
    bytes signature;
}

interface IDelegationManagerDisable {
    function disableDelegation(Delegation calldata delegation) external;
}

/// PanicFreezeEnforcer: the delegate may freeze the delegator's account and do nothing else.
///
/// A freeze is what `account_freeze` does (docs/onchain.md, "Account freeze"): the account
/// disables its delegations (`DelegationManager.disableDelegation`), or, with none live, makes
/// a zero-value call to itself that records the freeze. So one execution may be, exactly:
///   - a call to the DelegationManager, value 0, `disableDelegation(delegation)`, where that
///     delegation is not protected: its delegate is none of the addresses in `terms` (the
///     Recovery contract: a panic key must not switch off the guardians' recovery) and none
///     of its caveats is this enforcer (a panic delegation, this one or another panic key's,
///     cannot be switched off by a panic key: only the owner replaces panic keys);
///   - a call of the account to itself with value 0 and empty call data (the freeze marker).
/// Single call type and default exec type only (a batch could hide another call). Nothing
/// else: no value, no other target or method, so no `enableDelegation` (unfreeze), no
/// transfer, no call into the account's own functions. The DelegationManager lets an account
/// disable only its own delegations, and the owner can re-enable each one: a panic freeze
/// is never a revocation.
///
/// terms: protected delegates, 20 bytes each (may be empty); args: unused. Stateless.
contract PanicFreezeEnforcer {
    address public immutable delegationManager;

    constructor(address _delegationManager) {
        delegationManager = _delegationManager;
    }

    function beforeAllHook(bytes calldata, bytes calldata, bytes32, bytes calldata, bytes32, address, address) external pure {}

    function beforeHook(
        bytes calldata _terms,
        bytes calldata,
        bytes32 _mode,
        bytes calldata _executionCallData,
        bytes32,
        address _delegator,
        address
    ) external view {
        require(bytes1(_mode) == 0x00, "PanicFreezeEnforcer:invalid-call-type");
        require(bytes1(_mode << 8) == 0x00, "PanicFreezeEnforcer:invalid-execution-type");
        require(_terms.length % 20 == 0, "PanicFreezeEnforcer:invalid-terms-length");
        require(_executionCallData.length >= 52, "PanicFreezeEnforcer:invalid-execution-length");
        address target = address(bytes20(_executionCallData[0:20]));
        require(uint256(bytes32(_executionCallData[20:52])) == 0, "PanicFreezeEnforcer:value-not-allowed");
        bytes calldata callData = _executionCallData[52:];
        if (target == _delegator && callData.length == 0) return;
        require(target == delegationManager, "PanicFreezeEnforcer:target-not-allowed");
        require(
            callData.length >= 4 && bytes4(callData[0:4]) == IDelegationManagerDisable.disableDelegation.selector,
            "PanicFreezeEnforcer:method-not-allowed"
        );
        Delegation memory disabled = abi.decode(callData[4:], (Delegation));
        for (uint256 i = 0; i < _terms.length; i += 20) {
            require(disabled.delegate != address(bytes20(_terms[i:i + 20])), "PanicFreezeEnforcer:protected-delegation");
        }
        for (uint256 i = 0; i < disabled.caveats.length; ++i) {
            require(disabled.caveats[i].enforcer != address(this), "PanicFreezeEnforcer:protected-delegation");
        }
    }

    function afterHook(bytes calldata, bytes calldata, bytes32, bytes calldata, bytes32, address, address) external pure {}

    function afterAllHook(bytes calldata, bytes calldata, bytes32, bytes calldata, bytes32, address, address) external pure {}
}
