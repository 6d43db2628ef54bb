// SPDX-License-Identifier: MIT
// The payment channel's caveat enforcer (issue 46 item 5; docs/payments.md, "Micropayments:
// a channel of vouchers under a grant"). Compiled to Vouchers.ts by scripts/compile-contracts.ts.
//
// A channel is a delegation from the grant's delegate (the agent) to the merchant's settlement
// key, under the grant, carrying this caveat. Each payment is a voucher the agent signs off
// chain (EIP-712, this contract's domain): "the channel's total is now `cumulativeAmount`". The
// merchant keeps the highest and settles it in one redemption; this caveat lets the redemption
// move exactly what the voucher adds to what the channel settled before, to the channel's
// payee, in its token, never past its cap. The grant's own caveats (budget, per-action cap,
// recipients, expiry, revoke) run on the same transfer, so the grant bounds every channel.
pragma solidity 0.8.28;

import {ECDSA} from "@openzeppelin/contracts/utils/cryptography/ECDSA.sol";

/// VoucherEnforcer: a redemption transfers what the agent's newest voucher adds to the channel.
///
/// terms: signer(20) ‖ token(20) ‖ payTo(20) ‖ cap(32) ‖ salt(32) (124 bytes). The channel id is
/// keccak256(terms): a voucher names it, so a voucher is good for exactly these terms.
/// args: abi.encode(uint256 cumulativeAmount, uint256 nonce, bytes signature), the voucher.
/// The execution must be a single default call `token.transfer(payTo, amount)` with no value,
/// where amount = cumulativeAmount − settled (> 0), cumulativeAmount ≤ cap, and the signature
/// is the terms' signer's over Voucher(channel, cumulativeAmount, nonce). The settled total is
/// kept per caller (the DelegationManager) and channel id, so a second delegation with the
/// same terms shares it (a voucher settles once, whichever delegation carries it).
contract VoucherEnforcer {
    bytes4 private constant TRANSFER = 0xa9059cbb;
    bytes32 private constant DOMAIN_TYPEHASH =
        keccak256("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)");
    bytes32 public constant VOUCHER_TYPEHASH = keccak256("Voucher(bytes32 channel,uint256 cumulativeAmount,uint256 nonce)");

    /// Settled totals: caller → channel id → cumulative amount settled.
    mapping(address => mapping(bytes32 => uint256)) public settled;

    event VoucherSettled(
        address indexed sender, bytes32 indexed channel, address indexed payTo, uint256 cumulativeAmount, uint256 amount, uint256 nonce
    );

    function domainSeparator() public view returns (bytes32) {
        return keccak256(abi.encode(DOMAIN_TYPEHASH, keccak256("DAS Voucher"), keccak256("1"), block.chainid, address(this)));
    }

    function voucherDigest(bytes32 _channel, uint256 _cumulativeAmount, uint256 _nonce) public view returns (bytes32) {
        bytes32 structHash = keccak256(abi.encode(VOUCHER_TYPEHASH, _channel, _cumulativeAmount, _nonce));
        return keccak256(abi.encodePacked("\x19\x01", domainSeparator(), structHash));
    }

    function beforeAllHook(bytes calldata, bytes calldata, bytes32, bytes calldata, bytes32, address, address) external pure {}

    function beforeHook(
        bytes calldata _terms,
        bytes calldata _args,
        bytes32 _mode,
        bytes calldata _executionCallData,
        bytes32,
        address,
        address
    ) external {
        require(bytes1(_mode) == 0x00, "VoucherEnforcer:invalid-call-type");
        require(bytes1(_mode << 8) == 0x00, "VoucherEnforcer:invalid-execution-type");
        settle(_terms, _args, _executionCallData);
    }

    function settle(bytes calldata _terms, bytes calldata _args, bytes calldata _executionCallData) private {
        uint256 amount = checkExecution(_terms, _executionCallData);
        bytes32 channel = keccak256(_terms);
        (uint256 cumulativeAmount, uint256 nonce) = checkVoucher(_terms, channel, _args);
        uint256 before = settled[msg.sender][channel];
        require(cumulativeAmount > before, "VoucherEnforcer:voucher-already-settled");
        require(amount == cumulativeAmount - before, "VoucherEnforcer:invalid-amount");
        settled[msg.sender][channel] = cumulativeAmount;
        emit VoucherSettled(msg.sender, channel, address(bytes20(_terms[40:60])), cumulativeAmount, amount, nonce);
    }

    /// The execution is `token.transfer(payTo, amount)`, no value: its amount.
    function checkExecution(bytes calldata _terms, bytes calldata _executionCallData) private pure returns (uint256 amount_) {
        (, address token, address payTo,) = getTermsInfo(_terms);
        require(_executionCallData.length == 52 + 68, "VoucherEnforcer:invalid-execution-length");
        require(address(bytes20(_executionCallData[0:20])) == token, "VoucherEnforcer:invalid-token");
        require(uint256(bytes32(_executionCallData[20:52])) == 0, "VoucherEnforcer:value-not-allowed");
        bytes calldata callData = _executionCallData[52:];
        require(bytes4(callData[0:4]) == TRANSFER, "VoucherEnforcer:invalid-method");
        require(uint256(bytes32(callData[4:36])) == uint256(uint160(payTo)), "VoucherEnforcer:invalid-recipient");
        return uint256(bytes32(callData[36:68]));
    }

    /// The voucher in `_args` is the terms' signer's, for this channel, within its cap.
    function checkVoucher(bytes calldata _terms, bytes32 _channel, bytes calldata _args)
        private
        view
        returns (uint256 cumulativeAmount_, uint256 nonce_)
    {
        bytes memory signature;
        (cumulativeAmount_, nonce_, signature) = abi.decode(_args, (uint256, uint256, bytes));
        require(cumulativeAmount_ <= uint256(bytes32(_terms[60:92])), "VoucherEnforcer:cap-exceeded");
        (address recovered, ECDSA.RecoverError error,) = ECDSA.tryRecover(voucherDigest(_channel, cumulativeAmount_, nonce_), signature);
        require(error == ECDSA.RecoverError.NoError && recovered == address(bytes20(_terms[0:20])), "VoucherEnforcer:invalid-signature");
    }

    function afterHook(bytes calldata, bytes calldata, bytes32, bytes calldata, bytes32, address, address) external pure {}

    function afterAllHook(bytes calldata, bytes calldata, bytes32, bytes calldata, bytes32, address, address) external pure {}

    function getTermsInfo(bytes calldata _terms) public pure returns (address signer_, address token_, address payTo_, uint256 cap_) {
        require(_terms.length == 124, "VoucherEnforcer:invalid-terms-length");
        signer_ = address(bytes20(_terms[0:20]));
        token_ = address(bytes20(_terms[20:40]));
        payTo_ = address(bytes20(_terms[40:60]));
        cap_ = uint256(bytes32(_terms[60:92]));
    }
}
