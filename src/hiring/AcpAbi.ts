/**
 * The marketplace (ACP) contract functions the job builds call, copied verbatim
 * from the published client package `@virtuals-protocol/acp-node@0.3.0-beta.38`
 * (export `ACP_V2_ABI`, `dist/index.mjs`). Vendored rather than depended on:
 * the package pulls a whole account-abstraction stack we do not use. The
 * deployments are that package's `baseAcpConfigV2` / `baseSepoliaAcpConfigV2`.
 */
export const acpAbi = [
  {
    "inputs": [
      {
        "internalType": "address",
        "name": "provider",
        "type": "address"
      },
      {
        "internalType": "address",
        "name": "evaluator",
        "type": "address"
      },
      {
        "internalType": "uint256",
        "name": "expiredAt",
        "type": "uint256"
      },
      {
        "internalType": "address",
        "name": "paymentToken",
        "type": "address"
      },
      {
        "internalType": "uint256",
        "name": "budget",
        "type": "uint256"
      },
      {
        "internalType": "string",
        "name": "metadata",
        "type": "string"
      }
    ],
    "name": "createJob",
    "outputs": [
      {
        "internalType": "uint256",
        "name": "",
        "type": "uint256"
      }
    ],
    "stateMutability": "nonpayable",
    "type": "function"
  },
  {
    "inputs": [
      {
        "internalType": "uint256",
        "name": "jobId",
        "type": "uint256"
      },
      {
        "internalType": "uint256",
        "name": "amount",
        "type": "uint256"
      },
      {
        "internalType": "address",
        "name": "paymentToken",
        "type": "address"
      }
    ],
    "name": "setBudgetWithPaymentToken",
    "outputs": [],
    "stateMutability": "nonpayable",
    "type": "function"
  },
  {
    "inputs": [
      {
        "internalType": "uint256",
        "name": "memoId",
        "type": "uint256"
      },
      {
        "internalType": "bool",
        "name": "isApproved",
        "type": "bool"
      },
      {
        "internalType": "string",
        "name": "reason",
        "type": "string"
      }
    ],
    "name": "signMemo",
    "outputs": [],
    "stateMutability": "nonpayable",
    "type": "function"
  }
] as const

export interface AcpDeployment {
  readonly chainId: number
  /** The ACP router contract (escrow, jobs, memos). */
  readonly contract: `0x${string}`
  readonly paymentToken: { readonly symbol: string; readonly address: `0x${string}`; readonly decimals: number }
}

export const acpDeployments: ReadonlyArray<AcpDeployment> = [
  {
    chainId: 8453,
    contract: "0xa6C9BA866992cfD7fd6460ba912bfa405adA9df0",
    paymentToken: { symbol: "USDC", address: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913", decimals: 6 }
  },
  {
    chainId: 84532,
    contract: "0xdf54E6Ed6cD1d0632d973ADECf96597b7e87893c",
    paymentToken: { symbol: "USDC", address: "0x036CbD53842c5426634e7929541eC2318f3dCF7e", decimals: 6 }
  }
]
