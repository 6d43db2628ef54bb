// SPDX-License-Identifier: MIT
// A small ERC-20 token paymaster for EntryPoint v0.7 (local network and tests; see
// docs/onchain.md). The operation's sender pays gas in an accepted token at a fixed price
// set by the owner (token base units per 1 ETH, plus a markup); the paymaster pays the
// EntryPoint from its own deposit. Compiled to TokenPaymaster.ts (see that file's header).
//
// paymasterData (after paymaster address and the two 16-byte gas limits):
//   mode 0 (allowance): 0x00 ‖ token(20)
//     the sender has approved this paymaster BEFORE the operation (an allowance batched
//     into the operation's own call data runs after validation, too late to pre-charge).
//   mode 1 (permit):    0x01 ‖ token(20) ‖ amount(32) ‖ deadline(6) ‖ permit signature(65)
//     validation calls the token's EIP-2612 `permit(sender, this, amount, deadline, sig)`
//     (an owner account signs through ERC-1271) and requires the resulting allowance.
//   mode 2 (estimate):  0x02 ‖ token(20) ‖ any padding
//     for gas estimation only: the same work as mode 0 when the allowance is there (none when
//     it is not), and the validation always answers "signature failed", so a real handleOps
//     refuses it (AA34) before anything is charged to anyone.
// Modes 0 and 1 take the maximum charge (the token cost of the EntryPoint's `maxCost`) in
// validation with `transferFrom(sender, this, max)`, and postOp refunds what was not used.
// An account that cannot pay is refused at validation, before the EntryPoint charges the
// deposit; postOp only transfers the paymaster's own tokens back, so it cannot be made to
// revert by the sender (the deposit never pays for a user who did not pay).
// A price older than `maxPriceAge` seconds is refused at validation.
//
// Validation reads and writes the token's storage and calls the account (ERC-1271) and
// returns a context: a production bundler accepts that only from a staked paymaster (ERC-7562);
// the local Alto runs with --safe-mode false.
pragma solidity 0.8.28;

import {IPaymaster} from "@account-abstraction/contracts/interfaces/IPaymaster.sol";
import {IEntryPoint} from "@account-abstraction/contracts/interfaces/IEntryPoint.sol";
import {PackedUserOperation} from "@account-abstraction/contracts/interfaces/PackedUserOperation.sol";

interface IPaymasterToken {
    function balanceOf(address) external view returns (uint256);
    function allowance(address, address) external view returns (uint256);
    function transfer(address, uint256) external returns (bool);
    function transferFrom(address, address, uint256) external returns (bool);
    function permit(address, address, uint256, uint256, uint8, bytes32, bytes32) external;
}

contract TokenPaymaster is IPaymaster {
    uint256 private constant DATA_OFFSET = 52; // paymaster(20) ‖ verificationGas(16) ‖ postOpGas(16)
    uint256 private constant PERMIT_DATA_LENGTH = 124;
    uint256 private constant BPS = 10_000;
    uint256 private constant WEI_PER_ETH = 1e18;
    uint256 private constant SIG_VALIDATION_FAILED = 1;

    IEntryPoint public immutable entryPoint;
    address public owner;
    /// Token base units per 1 ETH of gas; 0 = not accepted.
    mapping(address => uint256) public tokenPricePerEth;
    /// When the owner last set each token's price (block timestamp).
    mapping(address => uint256) public tokenPriceUpdatedAt;
    /// A price older than this (seconds) is refused at validation.
    uint256 public maxPriceAge;
    /// 11_000 = the gas cost plus 10 %.
    uint256 public markupBps;
    /// Gas charged for postOp itself (its transferFrom), on top of the EntryPoint's actualGasCost.
    uint256 public postOpOverheadGas;

    event TokenPriceSet(address indexed token, uint256 pricePerEth);
    event MarkupSet(uint256 markupBps, uint256 postOpOverheadGas);
    event MaxPriceAgeSet(uint256 maxPriceAge);
    event GasCharged(address indexed sender, address indexed token, uint256 tokenAmount, uint256 actualGasCost);
    event GasRefunded(address indexed sender, address indexed token, uint256 tokenAmount);

    modifier onlyOwner() {
        require(msg.sender == owner, "TokenPaymaster: not owner");
        _;
    }

    modifier onlyEntryPoint() {
        require(msg.sender == address(entryPoint), "TokenPaymaster: not from EntryPoint");
        _;
    }

    constructor(
        IEntryPoint _entryPoint,
        address _owner,
        uint256 _markupBps,
        uint256 _postOpOverheadGas,
        uint256 _maxPriceAge
    ) {
        entryPoint = _entryPoint;
        owner = _owner;
        _setMarkup(_markupBps, _postOpOverheadGas);
        maxPriceAge = _maxPriceAge;
        emit MaxPriceAgeSet(_maxPriceAge);
    }

    // --- owner ---

    function setTokenPrice(address token, uint256 pricePerEth) external onlyOwner {
        tokenPricePerEth[token] = pricePerEth;
        tokenPriceUpdatedAt[token] = block.timestamp;
        emit TokenPriceSet(token, pricePerEth);
    }

    function setMaxPriceAge(uint256 _maxPriceAge) external onlyOwner {
        maxPriceAge = _maxPriceAge;
        emit MaxPriceAgeSet(_maxPriceAge);
    }

    function setMarkup(uint256 _markupBps, uint256 _postOpOverheadGas) external onlyOwner {
        _setMarkup(_markupBps, _postOpOverheadGas);
    }

    function _setMarkup(uint256 _markupBps, uint256 _postOpOverheadGas) private {
        require(_markupBps >= BPS && _markupBps <= 3 * BPS, "TokenPaymaster: markup out of range");
        markupBps = _markupBps;
        postOpOverheadGas = _postOpOverheadGas;
        emit MarkupSet(_markupBps, _postOpOverheadGas);
    }

    function transferOwnership(address newOwner) external onlyOwner {
        owner = newOwner;
    }

    function withdrawToken(address token, address to, uint256 amount) external onlyOwner {
        require(IPaymasterToken(token).transfer(to, amount), "TokenPaymaster: transfer failed");
    }

    function deposit() external payable {
        entryPoint.depositTo{value: msg.value}(address(this));
    }

    function getDeposit() external view returns (uint256) {
        return entryPoint.balanceOf(address(this));
    }

    function withdrawTo(address payable to, uint256 amount) external onlyOwner {
        entryPoint.withdrawTo(to, amount);
    }

    function addStake(uint32 unstakeDelaySec) external payable onlyOwner {
        entryPoint.addStake{value: msg.value}(unstakeDelaySec);
    }

    function unlockStake() external onlyOwner {
        entryPoint.unlockStake();
    }

    function withdrawStake(address payable to) external onlyOwner {
        entryPoint.withdrawStake(to);
    }

    // --- pricing ---

    /// Token units charged for `weiAmount` of gas: rounded up, markup included. Reverts for a token not accepted.
    function tokenCost(address token, uint256 weiAmount) public view returns (uint256) {
        uint256 price = tokenPricePerEth[token];
        require(price != 0, "TokenPaymaster: token not accepted");
        uint256 denominator = WEI_PER_ETH * BPS;
        return (weiAmount * price * markupBps + denominator - 1) / denominator;
    }

    // --- EntryPoint ---

    function validatePaymasterUserOp(PackedUserOperation calldata userOp, bytes32, uint256 maxCost)
        external
        onlyEntryPoint
        returns (bytes memory context, uint256 validationData)
    {
        bytes calldata data = userOp.paymasterAndData[DATA_OFFSET:];
        require(data.length >= 21, "TokenPaymaster: bad paymasterData");
        uint8 mode = uint8(data[0]);
        address token = address(bytes20(data[1:21]));
        address sender = userOp.sender;
        uint256 maxTokenCost = tokenCost(token, maxCost);
        require(block.timestamp - tokenPriceUpdatedAt[token] <= maxPriceAge, "TokenPaymaster: price too old");
        require(IPaymasterToken(token).balanceOf(sender) >= maxTokenCost, "TokenPaymaster: insufficient token balance");
        if (mode == 1) {
            require(data.length == PERMIT_DATA_LENGTH, "TokenPaymaster: bad permit data");
            uint256 amount = uint256(bytes32(data[21:53]));
            uint48 deadline = uint48(bytes6(data[53:59]));
            require(amount >= maxTokenCost, "TokenPaymaster: permit amount below the maximum cost");
            bytes32 r = bytes32(data[59:91]);
            bytes32 s = bytes32(data[91:123]);
            uint8 v = uint8(data[123]);
            // A permit already used (e.g. copied from the mempool) leaves the allowance: check that, not the call.
            try IPaymasterToken(token).permit(sender, address(this), amount, deadline, v, r, s) {} catch {}
            // validUntil = the permit's deadline (bits 160..207), signature valid.
            validationData = uint256(deadline) << 160;
        } else if (mode == 2) {
            // Estimation: charge only what can be charged, and fail the "signature" so it never executes.
            bool able = IPaymasterToken(token).allowance(sender, address(this)) >= maxTokenCost;
            if (able) {
                require(
                    IPaymasterToken(token).transferFrom(sender, address(this), maxTokenCost),
                    "TokenPaymaster: charge failed"
                );
            }
            return (abi.encode(sender, token, able ? maxTokenCost : 0), SIG_VALIDATION_FAILED);
        } else {
            require(mode == 0, "TokenPaymaster: unknown mode");
        }
        require(
            IPaymasterToken(token).allowance(sender, address(this)) >= maxTokenCost,
            mode == 1 ? "TokenPaymaster: permit not accepted" : "TokenPaymaster: allowance below the maximum cost"
        );
        // The maximum charge, taken before execution: postOp refunds what was not used.
        require(
            IPaymasterToken(token).transferFrom(sender, address(this), maxTokenCost), "TokenPaymaster: charge failed"
        );
        context = abi.encode(sender, token, maxTokenCost);
    }

    function postOp(PostOpMode, bytes calldata context, uint256 actualGasCost, uint256 actualUserOpFeePerGas)
        external
        onlyEntryPoint
    {
        (address sender, address token, uint256 prepaid) = abi.decode(context, (address, address, uint256));
        uint256 charge = tokenCost(token, actualGasCost + postOpOverheadGas * actualUserOpFeePerGas);
        if (charge > prepaid) charge = prepaid;
        uint256 refund = prepaid - charge;
        if (refund > 0) {
            require(IPaymasterToken(token).transfer(sender, refund), "TokenPaymaster: refund failed");
            emit GasRefunded(sender, token, refund);
        }
        emit GasCharged(sender, token, charge, actualGasCost);
    }
}

// The USD stablecoin of the local network: TestStablecoin (ERC-20, EIP-2612 permit, 6
// decimals, mint by deployer) whose permit also accepts an ERC-1271 signature when the
// owner is a contract, as USDC v2.2 does. The owner of the tokens that pay gas is the
// smart account, whose owner key signs the permit digest; plain `ecrecover` can never
// accept that. Same ABI as TestStablecoin.
contract PermitStablecoin {
    event Transfer(address indexed from, address indexed to, uint256 amount);
    event Approval(address indexed owner, address indexed spender, uint256 amount);

    string public name;
    string public symbol;
    uint8 public immutable decimals;
    string public constant version = "1";
    address public immutable minter;

    uint256 public totalSupply;
    mapping(address => uint256) public balanceOf;
    mapping(address => mapping(address => uint256)) public allowance;
    mapping(address => uint256) public nonces;

    bytes32 private constant PERMIT_TYPEHASH =
        keccak256("Permit(address owner,address spender,uint256 value,uint256 nonce,uint256 deadline)");
    bytes4 private constant ERC1271_MAGIC = 0x1626ba7e;

    constructor(string memory _name, string memory _symbol, uint8 _decimals) {
        name = _name;
        symbol = _symbol;
        decimals = _decimals;
        minter = msg.sender;
    }

    function approve(address spender, uint256 amount) public returns (bool) {
        allowance[msg.sender][spender] = amount;
        emit Approval(msg.sender, spender, amount);
        return true;
    }

    function transfer(address to, uint256 amount) public returns (bool) {
        require(balanceOf[msg.sender] >= amount, "ERC20: insufficient balance");
        balanceOf[msg.sender] -= amount;
        balanceOf[to] += amount;
        emit Transfer(msg.sender, to, amount);
        return true;
    }

    function transferFrom(address from, address to, uint256 amount) public returns (bool) {
        uint256 allowed = allowance[from][msg.sender];
        if (allowed != type(uint256).max) {
            require(allowed >= amount, "ERC20: insufficient allowance");
            allowance[from][msg.sender] = allowed - amount;
        }
        require(balanceOf[from] >= amount, "ERC20: insufficient balance");
        balanceOf[from] -= amount;
        balanceOf[to] += amount;
        emit Transfer(from, to, amount);
        return true;
    }

    function DOMAIN_SEPARATOR() public view returns (bytes32) {
        return keccak256(
            abi.encode(
                keccak256("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)"),
                keccak256(bytes(name)),
                keccak256(bytes(version)),
                block.chainid,
                address(this)
            )
        );
    }

    function permit(address owner, address spender, uint256 value, uint256 deadline, uint8 v, bytes32 r, bytes32 s)
        public
    {
        require(deadline >= block.timestamp, "ERC20Permit: expired deadline");
        bytes32 digest = keccak256(
            abi.encodePacked(
                "\x19\x01",
                DOMAIN_SEPARATOR(),
                keccak256(abi.encode(PERMIT_TYPEHASH, owner, spender, value, nonces[owner]++, deadline))
            )
        );
        require(_validSignature(owner, digest, v, r, s), "ERC20Permit: invalid signature");
        allowance[owner][spender] = value;
        emit Approval(owner, spender, value);
    }

    function _validSignature(address owner, bytes32 digest, uint8 v, bytes32 r, bytes32 s) private view returns (bool) {
        if (owner.code.length == 0) {
            address signer = ecrecover(digest, v, r, s);
            return signer != address(0) && signer == owner;
        }
        (bool ok, bytes memory result) =
            owner.staticcall(abi.encodeWithSelector(ERC1271_MAGIC, digest, abi.encodePacked(r, s, v)));
        return ok && result.length >= 32 && abi.decode(result, (bytes4)) == ERC1271_MAGIC;
    }

    function mint(address to, uint256 amount) public {
        require(msg.sender == minter, "TestStablecoin: not minter");
        totalSupply += amount;
        balanceOf[to] += amount;
        emit Transfer(address(0), to, amount);
    }
}
