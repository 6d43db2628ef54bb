// SPDX-License-Identifier: MIT
// A small agent-commerce (ACP) contract for the local network: the part of the published
// ACP v2 interface that the service's builds call (`createJob`, `setBudgetWithPaymentToken`,
// `signMemo`), plus the memos a provider writes (`createMemo`) and the escrow release, so the
// hire → job → fund → accept → deliver → evaluate flow runs on a chain here (docs/marketplace.md,
// "The local ACP contract"). Compiled to AgentCommerce.ts by scripts/compile-contracts.ts.
//
// Phases (as the upstream numbers them): REQUEST 0, NEGOTIATION 1, TRANSACTION 2,
// EVALUATION 3, COMPLETED 4, REJECTED 5, EXPIRED 6.
// - The client creates a job naming provider, evaluator (zero: the client evaluates),
//   expiry, payment token and budget: REQUEST.
// - `setBudgetWithPaymentToken` (client, before TRANSACTION) sets the budget and holds
//   exactly that much of the client's token in escrow (pulling or refunding the difference).
// - The provider accepts with a memo whose nextPhase is TRANSACTION (only once the escrow
//   holds the budget: funding is the client's consent), then delivers with a memo whose
//   nextPhase is EVALUATION (its content is the deliverable).
// - The evaluator signs the delivery memo: approved → COMPLETED and the escrow goes to the
//   provider; rejected → REJECTED and the escrow goes back to the client.
// - After `expiredAt`, anyone may return an unfinished job's escrow to the client: EXPIRED.
pragma solidity 0.8.28;

interface IAcpToken {
    function transfer(address to, uint256 amount) external returns (bool);
    function transferFrom(address from, address to, uint256 amount) external returns (bool);
}

contract AgentCommerce {
    uint8 public constant REQUEST = 0;
    uint8 public constant NEGOTIATION = 1;
    uint8 public constant TRANSACTION = 2;
    uint8 public constant EVALUATION = 3;
    uint8 public constant COMPLETED = 4;
    uint8 public constant REJECTED = 5;
    uint8 public constant EXPIRED = 6;

    struct Job {
        address client;
        address provider;
        address evaluator;
        address paymentToken;
        uint256 expiredAt;
        uint256 budget;
        uint256 escrow;
        uint8 phase;
    }

    struct Memo {
        uint256 jobId;
        address sender;
        uint8 nextPhase;
        bool signed;
    }

    uint256 public jobCount;
    uint256 public memoCount;
    mapping(uint256 => Job) public jobs;
    mapping(uint256 => Memo) public memos;

    event JobCreated(
        uint256 indexed jobId,
        address indexed client,
        address indexed provider,
        address evaluator,
        address paymentToken,
        uint256 budget,
        uint256 expiredAt,
        string metadata
    );
    event BudgetSet(uint256 indexed jobId, address paymentToken, uint256 budget);
    event MemoCreated(uint256 indexed jobId, uint256 indexed memoId, address indexed sender, uint8 memoType, uint8 nextPhase, string content);
    event MemoSigned(uint256 indexed memoId, address indexed signer, bool isApproved, string reason);
    event JobPhaseUpdated(uint256 indexed jobId, uint8 oldPhase, uint8 newPhase);
    event EscrowReleased(uint256 indexed jobId, address indexed to, uint256 amount);

    function createJob(
        address provider,
        address evaluator,
        uint256 expiredAt,
        address paymentToken,
        uint256 budget,
        string calldata metadata
    ) external returns (uint256 jobId) {
        require(provider != address(0) && provider != msg.sender, "ACP: bad provider");
        require(paymentToken != address(0), "ACP: bad payment token");
        require(expiredAt > block.timestamp, "ACP: expiry in the past");
        jobId = ++jobCount;
        jobs[jobId] = Job(msg.sender, provider, evaluator, paymentToken, expiredAt, budget, 0, REQUEST);
        emit JobCreated(jobId, msg.sender, provider, evaluator, paymentToken, budget, expiredAt, metadata);
    }

    function setBudgetWithPaymentToken(uint256 jobId, uint256 amount, address paymentToken) external {
        Job storage job = jobs[jobId];
        require(job.client != address(0), "ACP: no such job");
        require(msg.sender == job.client, "ACP: not the client");
        require(job.phase < TRANSACTION, "ACP: budget is fixed");
        require(block.timestamp < job.expiredAt, "ACP: job expired");
        require(paymentToken == job.paymentToken, "ACP: wrong payment token");
        uint256 held = job.escrow;
        job.budget = amount;
        job.escrow = amount;
        if (amount > held) {
            require(IAcpToken(paymentToken).transferFrom(msg.sender, address(this), amount - held), "ACP: escrow transfer failed");
        } else if (held > amount) {
            require(IAcpToken(paymentToken).transfer(msg.sender, held - amount), "ACP: refund failed");
        }
        emit BudgetSet(jobId, paymentToken, amount);
    }

    function createMemo(uint256 jobId, string calldata content, uint8 memoType, bool isSecured, uint8 nextPhase)
        external
        returns (uint256 memoId)
    {
        isSecured;
        Job storage job = jobs[jobId];
        require(job.client != address(0), "ACP: no such job");
        require(msg.sender == job.provider, "ACP: not the provider");
        require(block.timestamp < job.expiredAt, "ACP: job expired");
        if (nextPhase == NEGOTIATION) {
            require(job.phase == REQUEST, "ACP: wrong phase");
        } else if (nextPhase == TRANSACTION) {
            require(job.phase == REQUEST || job.phase == NEGOTIATION, "ACP: wrong phase");
            require(job.budget > 0 && job.escrow == job.budget, "ACP: escrow not funded");
        } else if (nextPhase == EVALUATION) {
            require(job.phase == TRANSACTION, "ACP: wrong phase");
        } else {
            revert("ACP: bad next phase");
        }
        memoId = ++memoCount;
        memos[memoId] = Memo(jobId, msg.sender, nextPhase, false);
        emit MemoCreated(jobId, memoId, msg.sender, memoType, nextPhase, content);
        moveTo(jobId, job, nextPhase);
    }

    function signMemo(uint256 memoId, bool isApproved, string calldata reason) external {
        Memo storage memo = memos[memoId];
        require(memo.sender != address(0), "ACP: no such memo");
        require(!memo.signed, "ACP: memo already signed");
        Job storage job = jobs[memo.jobId];
        require(memo.nextPhase == EVALUATION && job.phase == EVALUATION, "ACP: nothing to evaluate");
        address evaluator = job.evaluator == address(0) ? job.client : job.evaluator;
        require(msg.sender == evaluator, "ACP: not the evaluator");
        memo.signed = true;
        emit MemoSigned(memoId, msg.sender, isApproved, reason);
        uint256 amount = job.escrow;
        job.escrow = 0;
        if (isApproved) {
            moveTo(memo.jobId, job, COMPLETED);
            release(memo.jobId, job.paymentToken, job.provider, amount);
        } else {
            moveTo(memo.jobId, job, REJECTED);
            release(memo.jobId, job.paymentToken, job.client, amount);
        }
    }

    /// After its expiry, an unfinished job's escrow goes back to the client.
    function claimRefund(uint256 jobId) external {
        Job storage job = jobs[jobId];
        require(job.client != address(0), "ACP: no such job");
        require(block.timestamp >= job.expiredAt, "ACP: not expired");
        require(job.phase < COMPLETED, "ACP: job is final");
        uint256 amount = job.escrow;
        job.escrow = 0;
        moveTo(jobId, job, EXPIRED);
        release(jobId, job.paymentToken, job.client, amount);
    }

    function moveTo(uint256 jobId, Job storage job, uint8 phase) private {
        emit JobPhaseUpdated(jobId, job.phase, phase);
        job.phase = phase;
    }

    function release(uint256 jobId, address token, address to, uint256 amount) private {
        if (amount == 0) return;
        require(IAcpToken(token).transfer(to, amount), "ACP: release failed");
        emit EscrowReleased(jobId, to, amount);
    }
}
