// SPDX-License-Identifier: MIT
// A caveat enforcer of our own for the MetaMask Delegation Framework: approvals above a
// threshold (docs/onchain.md, "Approvals above a threshold"). Compiled to Approvals.ts by
// scripts/compile-contracts.ts; deployed by LocalNetwork.ts. The hooks' parameters are those
// of every caveat enforcer (see Enforcers.sol's header).
pragma solidity 0.8.28;

/// ApprovalEnforcer: an execution above its token's threshold needs m of n named approvers.
///
/// terms: m(1) ‖ n(1) ‖ n × approver(20) ‖ k × (token(20) ‖ threshold(32)), 1 ≤ m ≤ n, k ≥ 0.
///
/// The only execution that needs no approval is a single call, default exec type, of exactly
/// `transfer(address,uint256)` (68 bytes, no native value) to a token of the terms, of at most
/// that token's threshold. Every other execution (more than the threshold, a token not in the
/// terms, any other call) needs approvals: args = abi.encode(uint256 nonce, uint256 deadline,
/// (address approver, bytes signature)[]), where at least m distinct approvers of the terms
/// each sign the EIP-712 `Approval` of this delegation and this exact execution (ECDSA for an
/// address without code, ERC-1271 for one with code), the deadline (unix seconds) is not past
/// and the nonce is unused. The nonce is then spent, per caller (the DelegationManager) and
/// delegation hash: an approval is good for one execution of one delegation. The redemption
/// reverts as a whole if the execution does, and so leaves the nonce unspent.
/// Single call only, as TransferCapEnforcer: an approval names one execution, never a batch.
///
/// No one approves their own redemption (issue 41): an approval is refused when the approver is
/// the redeemer (the `msg.sender` of `redeemDelegations` the DelegationManager hands the hooks),
/// the redeemer's owner (`owner()` of a redeemer with code: a HybridDeleGator's EOA key), or an
/// account with code whose `owner()` is either of them (another smart account of the same key).
contract ApprovalEnforcer {
    bytes4 private constant TRANSFER = 0xa9059cbb;
    bytes4 private constant ERC1271_MAGIC = 0x1626ba7e;
    /// owner(): Ownable's, which a HybridDeleGator has.
    bytes4 private constant OWNER = 0x8da5cb5b;
    uint256 private constant OWNER_GAS = 30_000;
    /// secp256k1 order / 2: a larger s is the malleable twin of a valid signature.
    uint256 private constant HALF_ORDER = 0x7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0;
    bytes32 private constant DOMAIN_TYPEHASH =
        keccak256("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)");
    bytes32 public constant APPROVAL_TYPEHASH =
        keccak256("Approval(bytes32 delegationHash,address target,uint256 value,bytes callData,uint256 nonce,uint256 deadline)");

    struct Approval {
        address approver;
        bytes signature;
    }

    /// Spent nonces: caller (the DelegationManager, or a wrapper enforcer) → delegation hash → nonce.
    mapping(address => mapping(bytes32 => mapping(uint256 => bool))) public spent;

    event ApprovalSpent(address indexed sender, bytes32 indexed delegationHash, uint256 nonce);

    function beforeAllHook(bytes calldata, bytes calldata, bytes32, bytes calldata, bytes32, address, address) external pure {}

    function beforeHook(
        bytes calldata _terms,
        bytes calldata _args,
        bytes32 _mode,
        bytes calldata _executionCallData,
        bytes32 _delegationHash,
        address,
        address _redeemer
    ) external {
        require(bytes1(_mode) == 0x00, "ApprovalEnforcer:invalid-call-type");
        require(bytes1(_mode << 8) == 0x00, "ApprovalEnforcer:invalid-execution-type");
        require(_executionCallData.length >= 52, "ApprovalEnforcer:invalid-execution-length");
        uint256 m = requiredOf(_terms);
        if (!gated(_terms, _executionCallData)) return;
        require(_args.length != 0, "ApprovalEnforcer:not-enough-approvals");
        (uint256 nonce, uint256 deadline, Approval[] memory approvals) = abi.decode(_args, (uint256, uint256, Approval[]));
        require(approvals.length >= m, "ApprovalEnforcer:not-enough-approvals");
        require(block.timestamp <= deadline, "ApprovalEnforcer:expired");
        require(!spent[msg.sender][_delegationHash][nonce], "ApprovalEnforcer:nonce-used");
        bytes32 digest = approvalDigest(
            _delegationHash,
            address(bytes20(_executionCallData[0:20])),
            uint256(bytes32(_executionCallData[20:52])),
            _executionCallData[52:],
            nonce,
            deadline
        );
        checkApprovers(_terms, digest, approvals, _redeemer);
        spent[msg.sender][_delegationHash][nonce] = true;
        emit ApprovalSpent(msg.sender, _delegationHash, nonce);
    }

    function afterHook(bytes calldata, bytes calldata, bytes32, bytes calldata, bytes32, address, address) external pure {}

    function afterAllHook(bytes calldata, bytes calldata, bytes32, bytes calldata, bytes32, address, address) external pure {}

    /// The EIP-712 digest an approver signs (domain: name "ApprovalEnforcer", version "1", this chain, this contract).
    function approvalDigest(
        bytes32 _delegationHash,
        address _target,
        uint256 _value,
        bytes calldata _callData,
        uint256 _nonce,
        uint256 _deadline
    ) public view returns (bytes32) {
        bytes32 structHash =
            keccak256(abi.encode(APPROVAL_TYPEHASH, _delegationHash, _target, _value, keccak256(_callData), _nonce, _deadline));
        return keccak256(abi.encodePacked(hex"1901", domainSeparator(), structHash));
    }

    function domainSeparator() public view returns (bytes32) {
        return keccak256(abi.encode(DOMAIN_TYPEHASH, keccak256("ApprovalEnforcer"), keccak256("1"), block.chainid, address(this)));
    }

    /// ERC-5267: the EIP-712 domain, for wallets and clients that read it.
    function eip712Domain()
        external
        view
        returns (bytes1, string memory, string memory, uint256, address, bytes32, uint256[] memory)
    {
        return (hex"0f", "ApprovalEnforcer", "1", block.chainid, address(this), bytes32(0), new uint256[](0));
    }

    /// Whether an execution needs approvals under these terms (see the contract's comment).
    function needsApproval(bytes calldata _terms, bytes calldata _executionCallData) external pure returns (bool) {
        requiredOf(_terms);
        require(_executionCallData.length >= 52, "ApprovalEnforcer:invalid-execution-length");
        return gated(_terms, _executionCallData);
    }

    /// Whether the execution is anything but a transfer at or below its token's threshold.
    function gated(bytes calldata _terms, bytes calldata _executionCallData) private pure returns (bool) {
        bytes calldata callData = _executionCallData[52:];
        if (uint256(bytes32(_executionCallData[20:52])) != 0 || callData.length != 68 || bytes4(callData[0:4]) != TRANSFER) return true;
        address token = address(bytes20(_executionCallData[0:20]));
        for (uint256 i = 2 + 20 * uint8(_terms[1]); i < _terms.length; i += 52) {
            if (address(bytes20(_terms[i:i + 20])) == token) return uint256(bytes32(callData[36:68])) > uint256(bytes32(_terms[i + 20:i + 52]));
        }
        return true;
    }

    /// m, after checking the terms' shape.
    function requiredOf(bytes calldata _terms) private pure returns (uint256 m_) {
        require(_terms.length >= 2, "ApprovalEnforcer:invalid-terms");
        m_ = uint8(_terms[0]);
        uint256 n = uint8(_terms[1]);
        uint256 tokensAt = 2 + 20 * n;
        require(m_ >= 1 && m_ <= n && _terms.length >= tokensAt && (_terms.length - tokensAt) % 52 == 0, "ApprovalEnforcer:invalid-terms");
    }

    /// Every approval is by a distinct approver of the terms, none the redeemer's own, with a valid signature of `digest`.
    function checkApprovers(bytes calldata _terms, bytes32 _digest, Approval[] memory _approvals, address _redeemer) private view {
        uint256 n = uint8(_terms[1]);
        uint256 seen; // bit i: approver i of the terms has signed
        address redeemerOwner = ownerOf(_redeemer);
        for (uint256 a = 0; a < _approvals.length; ++a) {
            address approver = _approvals[a].approver;
            uint256 i = 0;
            while (i < n && address(bytes20(_terms[2 + 20 * i:22 + 20 * i])) != approver) ++i;
            require(i < n, "ApprovalEnforcer:approver-not-named");
            require(seen & (1 << i) == 0, "ApprovalEnforcer:duplicate-approver");
            seen |= 1 << i;
            require(!redeemersOwn(approver, _redeemer, redeemerOwner), "ApprovalEnforcer:approver-is-redeemer");
            require(isValidSignature(approver, _digest, _approvals[a].signature), "ApprovalEnforcer:invalid-signature");
        }
    }

    /// Whether `_approver` is the redeemer, its owner, or an account owned by either.
    function redeemersOwn(address _approver, address _redeemer, address _redeemerOwner) private view returns (bool) {
        if (_approver == _redeemer || (_redeemerOwner != address(0) && _approver == _redeemerOwner)) return true;
        address approverOwner = ownerOf(_approver);
        return approverOwner != address(0) && (approverOwner == _redeemer || approverOwner == _redeemerOwner);
    }

    /// `owner()` of an account with code (a HybridDeleGator's EOA owner), or zero: no code, no such
    /// function, a revert, or an answer that is not an address. Gas-bounded: a hostile account
    /// cannot make the check cost more than this.
    function ownerOf(address _account) public view returns (address owner_) {
        if (_account.code.length == 0) return address(0);
        (bool ok, bytes memory result) = _account.staticcall{gas: OWNER_GAS}(abi.encodeWithSelector(OWNER));
        if (!ok || result.length != 32 || uint256(bytes32(result)) >> 160 != 0) return address(0);
        owner_ = address(uint160(uint256(bytes32(result))));
    }

    /// ECDSA (65 bytes, low s) for an address without code, ERC-1271 for one with code.
    function isValidSignature(address _signer, bytes32 _digest, bytes memory _signature) private view returns (bool) {
        if (_signer.code.length == 0) {
            if (_signature.length != 65) return false;
            bytes32 r;
            bytes32 s;
            uint8 v;
            assembly {
                r := mload(add(_signature, 32))
                s := mload(add(_signature, 64))
                v := byte(0, mload(add(_signature, 96)))
            }
            if (uint256(s) > HALF_ORDER) return false;
            address recovered = ecrecover(_digest, v, r, s);
            return recovered != address(0) && recovered == _signer;
        }
        (bool ok, bytes memory result) = _signer.staticcall(abi.encodeWithSelector(ERC1271_MAGIC, _digest, _signature));
        return ok && result.length == 32 && bytes32(result) == bytes32(ERC1271_MAGIC);
    }
}
