// SPDX-License-Identifier: MIT
// Caveat enforcers of our own for the MetaMask Delegation Framework, where none of the
// framework's does the job (see docs/onchain.md, "Which enforcer holds which limit").
// Compiled to Enforcers.ts by scripts/compile-contracts.ts; deployed by LocalNetwork.ts.
//
// The DelegationManager calls four hooks on every caveat of every delegation it redeems,
// each with (terms, args, mode, executionCallData, delegationHash, delegator, redeemer):
// beforeAllHook, beforeHook (before the execution), afterHook, afterAllHook. A revert in any
// hook reverts the whole redemption with the hook's reason. `mode` is the ERC-7579 mode
// (byte 0 the call type, byte 1 the exec type); for a single call, `executionCallData` is
// target(20) ‖ value(32) ‖ callData.
pragma solidity 0.8.28;

/// TransferCapEnforcer: one execution may transfer at most a fixed amount of a token.
///
/// terms: one or more 52-byte entries token(20) ‖ maxAmount(32); args: unused.
/// The execution must be a single call in the default exec type, to one of the terms'
/// tokens, with call data exactly `transfer(address,uint256)` (68 bytes), whose amount is at
/// most that token's maxAmount. Stateless: it limits each action, not the running total
/// (MultiTokenPeriodEnforcer does that).
contract TransferCapEnforcer {
    bytes4 private constant TRANSFER = 0xa9059cbb;

    function beforeAllHook(bytes calldata, bytes calldata, bytes32, bytes calldata, bytes32, address, address) external pure {}

    function beforeHook(
        bytes calldata _terms,
        bytes calldata,
        bytes32 _mode,
        bytes calldata _executionCallData,
        bytes32,
        address,
        address
    ) external pure {
        require(bytes1(_mode) == 0x00, "TransferCapEnforcer:invalid-call-type");
        require(bytes1(_mode << 8) == 0x00, "TransferCapEnforcer:invalid-execution-type");
        check(_terms, _executionCallData);
    }

    function check(bytes calldata _terms, bytes calldata _executionCallData) private pure {
        require(_terms.length != 0 && _terms.length % 52 == 0, "TransferCapEnforcer:invalid-terms-length");
        require(_executionCallData.length >= 52, "TransferCapEnforcer:invalid-execution-length");
        bytes calldata callData = _executionCallData[52:];
        require(callData.length == 68 && bytes4(callData[0:4]) == TRANSFER, "TransferCapEnforcer:invalid-method");
        (bool found, uint256 cap) = capOf(_terms, address(bytes20(_executionCallData[0:20])));
        require(found, "TransferCapEnforcer:token-not-allowed");
        require(uint256(bytes32(callData[36:68])) <= cap, "TransferCapEnforcer:amount-exceeded");
    }

    function afterHook(bytes calldata, bytes calldata, bytes32, bytes calldata, bytes32, address, address) external pure {}

    function afterAllHook(bytes calldata, bytes calldata, bytes32, bytes calldata, bytes32, address, address) external pure {}

    /// The cap of `token` in `terms` (the first entry naming it).
    function capOf(bytes calldata _terms, address _token) public pure returns (bool found_, uint256 cap_) {
        for (uint256 i = 0; i + 52 <= _terms.length; i += 52) {
            if (address(bytes20(_terms[i:i + 20])) == _token) return (true, uint256(bytes32(_terms[i + 20:i + 52])));
        }
        return (false, 0);
    }
}

/// ArgumentCapEnforcer: one uint256 argument of the call is capped per call and in total.
///
/// terms: offset(32) ‖ maxPerCall(32) ‖ maxTotal(32) (96 bytes); args: unused.
/// The execution must be a single call in the default exec type whose call data holds a
/// 32-byte word at `offset` (counted from the selector's first byte): that word must be at
/// most maxPerCall, and the sum of it over every redemption of the delegation at most
/// maxTotal. The sum is kept per caller (the DelegationManager, or a wrapper enforcer),
/// delegation hash and function selector, so caps on different functions of one delegation
/// (inside one LogicalOrWrapper) never share a total. Used by marketplace mandates:
/// `approve`'s amount, `createJob`'s budget and `setBudgetWithPaymentToken`'s amount.
contract ArgumentCapEnforcer {
    /// Running totals: caller → delegation hash → selector → sum.
    mapping(address => mapping(bytes32 => mapping(bytes4 => uint256))) public totals;

    event ArgumentCounted(address indexed sender, bytes32 indexed delegationHash, bytes4 selector, uint256 value, uint256 total);

    function beforeAllHook(bytes calldata, bytes calldata, bytes32, bytes calldata, bytes32, address, address) external pure {}

    function beforeHook(
        bytes calldata _terms,
        bytes calldata,
        bytes32 _mode,
        bytes calldata _executionCallData,
        bytes32 _delegationHash,
        address,
        address
    ) external {
        require(bytes1(_mode) == 0x00, "ArgumentCapEnforcer:invalid-call-type");
        require(bytes1(_mode << 8) == 0x00, "ArgumentCapEnforcer:invalid-execution-type");
        (uint256 offset, uint256 maxPerCall, uint256 maxTotal) = getTermsInfo(_terms);
        require(_executionCallData.length >= 52, "ArgumentCapEnforcer:invalid-execution-length");
        bytes calldata callData = _executionCallData[52:];
        require(offset >= 4 && callData.length >= offset + 32, "ArgumentCapEnforcer:argument-missing");
        bytes4 selector = bytes4(callData[0:4]);
        uint256 value = uint256(bytes32(callData[offset:offset + 32]));
        require(value <= maxPerCall, "ArgumentCapEnforcer:per-call-exceeded");
        uint256 total = totals[msg.sender][_delegationHash][selector] + value;
        require(total <= maxTotal, "ArgumentCapEnforcer:total-exceeded");
        totals[msg.sender][_delegationHash][selector] = total;
        emit ArgumentCounted(msg.sender, _delegationHash, selector, value, total);
    }

    function afterHook(bytes calldata, bytes calldata, bytes32, bytes calldata, bytes32, address, address) external pure {}

    function afterAllHook(bytes calldata, bytes calldata, bytes32, bytes calldata, bytes32, address, address) external pure {}

    function getTermsInfo(bytes calldata _terms) public pure returns (uint256 offset_, uint256 maxPerCall_, uint256 maxTotal_) {
        require(_terms.length == 96, "ArgumentCapEnforcer:invalid-terms-length");
        offset_ = uint256(bytes32(_terms[0:32]));
        maxPerCall_ = uint256(bytes32(_terms[32:64]));
        maxTotal_ = uint256(bytes32(_terms[64:96]));
    }
}
