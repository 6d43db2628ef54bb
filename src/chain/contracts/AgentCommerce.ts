/**
 * Generated from AgentCommerce.sol by scripts/compile-contracts.ts with solc-js 0.8.28+commit.7893614a.Emscripten.clang
 * (optimizer on, 200 runs, evm cancun). Do not edit by hand:
 * change the source and run `npm run contracts:compile`.
 */
export const agentCommerceAbi = [
  {
    "anonymous": false,
    "inputs": [
      {
        "indexed": true,
        "internalType": "uint256",
        "name": "jobId",
        "type": "uint256"
      },
      {
        "indexed": false,
        "internalType": "address",
        "name": "paymentToken",
        "type": "address"
      },
      {
        "indexed": false,
        "internalType": "uint256",
        "name": "budget",
        "type": "uint256"
      }
    ],
    "name": "BudgetSet",
    "type": "event"
  },
  {
    "anonymous": false,
    "inputs": [
      {
        "indexed": true,
        "internalType": "uint256",
        "name": "jobId",
        "type": "uint256"
      },
      {
        "indexed": true,
        "internalType": "address",
        "name": "to",
        "type": "address"
      },
      {
        "indexed": false,
        "internalType": "uint256",
        "name": "amount",
        "type": "uint256"
      }
    ],
    "name": "EscrowReleased",
    "type": "event"
  },
  {
    "anonymous": false,
    "inputs": [
      {
        "indexed": true,
        "internalType": "uint256",
        "name": "jobId",
        "type": "uint256"
      },
      {
        "indexed": true,
        "internalType": "address",
        "name": "client",
        "type": "address"
      },
      {
        "indexed": true,
        "internalType": "address",
        "name": "provider",
        "type": "address"
      },
      {
        "indexed": false,
        "internalType": "address",
        "name": "evaluator",
        "type": "address"
      },
      {
        "indexed": false,
        "internalType": "address",
        "name": "paymentToken",
        "type": "address"
      },
      {
        "indexed": false,
        "internalType": "uint256",
        "name": "budget",
        "type": "uint256"
      },
      {
        "indexed": false,
        "internalType": "uint256",
        "name": "expiredAt",
        "type": "uint256"
      },
      {
        "indexed": false,
        "internalType": "string",
        "name": "metadata",
        "type": "string"
      }
    ],
    "name": "JobCreated",
    "type": "event"
  },
  {
    "anonymous": false,
    "inputs": [
      {
        "indexed": true,
        "internalType": "uint256",
        "name": "jobId",
        "type": "uint256"
      },
      {
        "indexed": false,
        "internalType": "uint8",
        "name": "oldPhase",
        "type": "uint8"
      },
      {
        "indexed": false,
        "internalType": "uint8",
        "name": "newPhase",
        "type": "uint8"
      }
    ],
    "name": "JobPhaseUpdated",
    "type": "event"
  },
  {
    "anonymous": false,
    "inputs": [
      {
        "indexed": true,
        "internalType": "uint256",
        "name": "jobId",
        "type": "uint256"
      },
      {
        "indexed": true,
        "internalType": "uint256",
        "name": "memoId",
        "type": "uint256"
      },
      {
        "indexed": true,
        "internalType": "address",
        "name": "sender",
        "type": "address"
      },
      {
        "indexed": false,
        "internalType": "uint8",
        "name": "memoType",
        "type": "uint8"
      },
      {
        "indexed": false,
        "internalType": "uint8",
        "name": "nextPhase",
        "type": "uint8"
      },
      {
        "indexed": false,
        "internalType": "string",
        "name": "content",
        "type": "string"
      }
    ],
    "name": "MemoCreated",
    "type": "event"
  },
  {
    "anonymous": false,
    "inputs": [
      {
        "indexed": true,
        "internalType": "uint256",
        "name": "memoId",
        "type": "uint256"
      },
      {
        "indexed": true,
        "internalType": "address",
        "name": "signer",
        "type": "address"
      },
      {
        "indexed": false,
        "internalType": "bool",
        "name": "isApproved",
        "type": "bool"
      },
      {
        "indexed": false,
        "internalType": "string",
        "name": "reason",
        "type": "string"
      }
    ],
    "name": "MemoSigned",
    "type": "event"
  },
  {
    "inputs": [],
    "name": "COMPLETED",
    "outputs": [
      {
        "internalType": "uint8",
        "name": "",
        "type": "uint8"
      }
    ],
    "stateMutability": "view",
    "type": "function"
  },
  {
    "inputs": [],
    "name": "EVALUATION",
    "outputs": [
      {
        "internalType": "uint8",
        "name": "",
        "type": "uint8"
      }
    ],
    "stateMutability": "view",
    "type": "function"
  },
  {
    "inputs": [],
    "name": "EXPIRED",
    "outputs": [
      {
        "internalType": "uint8",
        "name": "",
        "type": "uint8"
      }
    ],
    "stateMutability": "view",
    "type": "function"
  },
  {
    "inputs": [],
    "name": "NEGOTIATION",
    "outputs": [
      {
        "internalType": "uint8",
        "name": "",
        "type": "uint8"
      }
    ],
    "stateMutability": "view",
    "type": "function"
  },
  {
    "inputs": [],
    "name": "REJECTED",
    "outputs": [
      {
        "internalType": "uint8",
        "name": "",
        "type": "uint8"
      }
    ],
    "stateMutability": "view",
    "type": "function"
  },
  {
    "inputs": [],
    "name": "REQUEST",
    "outputs": [
      {
        "internalType": "uint8",
        "name": "",
        "type": "uint8"
      }
    ],
    "stateMutability": "view",
    "type": "function"
  },
  {
    "inputs": [],
    "name": "TRANSACTION",
    "outputs": [
      {
        "internalType": "uint8",
        "name": "",
        "type": "uint8"
      }
    ],
    "stateMutability": "view",
    "type": "function"
  },
  {
    "inputs": [
      {
        "internalType": "uint256",
        "name": "jobId",
        "type": "uint256"
      }
    ],
    "name": "claimRefund",
    "outputs": [],
    "stateMutability": "nonpayable",
    "type": "function"
  },
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
        "name": "jobId",
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
        "internalType": "string",
        "name": "content",
        "type": "string"
      },
      {
        "internalType": "uint8",
        "name": "memoType",
        "type": "uint8"
      },
      {
        "internalType": "bool",
        "name": "isSecured",
        "type": "bool"
      },
      {
        "internalType": "uint8",
        "name": "nextPhase",
        "type": "uint8"
      }
    ],
    "name": "createMemo",
    "outputs": [
      {
        "internalType": "uint256",
        "name": "memoId",
        "type": "uint256"
      }
    ],
    "stateMutability": "nonpayable",
    "type": "function"
  },
  {
    "inputs": [],
    "name": "jobCount",
    "outputs": [
      {
        "internalType": "uint256",
        "name": "",
        "type": "uint256"
      }
    ],
    "stateMutability": "view",
    "type": "function"
  },
  {
    "inputs": [
      {
        "internalType": "uint256",
        "name": "",
        "type": "uint256"
      }
    ],
    "name": "jobs",
    "outputs": [
      {
        "internalType": "address",
        "name": "client",
        "type": "address"
      },
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
        "internalType": "address",
        "name": "paymentToken",
        "type": "address"
      },
      {
        "internalType": "uint256",
        "name": "expiredAt",
        "type": "uint256"
      },
      {
        "internalType": "uint256",
        "name": "budget",
        "type": "uint256"
      },
      {
        "internalType": "uint256",
        "name": "escrow",
        "type": "uint256"
      },
      {
        "internalType": "uint8",
        "name": "phase",
        "type": "uint8"
      }
    ],
    "stateMutability": "view",
    "type": "function"
  },
  {
    "inputs": [],
    "name": "memoCount",
    "outputs": [
      {
        "internalType": "uint256",
        "name": "",
        "type": "uint256"
      }
    ],
    "stateMutability": "view",
    "type": "function"
  },
  {
    "inputs": [
      {
        "internalType": "uint256",
        "name": "",
        "type": "uint256"
      }
    ],
    "name": "memos",
    "outputs": [
      {
        "internalType": "uint256",
        "name": "jobId",
        "type": "uint256"
      },
      {
        "internalType": "address",
        "name": "sender",
        "type": "address"
      },
      {
        "internalType": "uint8",
        "name": "nextPhase",
        "type": "uint8"
      },
      {
        "internalType": "bool",
        "name": "signed",
        "type": "bool"
      }
    ],
    "stateMutability": "view",
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

export const agentCommerceBytecode = "0x6080604052348015600e575f5ffd5b506115388061001c5f395ff3fe608060405234801561000f575f5ffd5b50600436106100fb575f3560e01c8063a5f1159811610093578063e3e6096111610063578063e3e609611461026b578063e8dfdf0414610272578063ef2fbd53146102e9578063fa239b1e146102f1575f5ffd5b8063a5f1159814610235578063cb7390b714610248578063d500d4cd14610250578063db5b1b6714610263575f5ffd5b80634c5d8a0f116100ce5780634c5d8a0f146101fd5780634ce6c24a146102055780635b7baf641461020d578063712ee07a14610222575f5ffd5b806314c10e9c146100ff578063180aedf31461011e578063265dc864146101d4578063414ac85b146101f5575b5f5ffd5b610107600281565b60405160ff90911681526020015b60405180910390f35b61018361012c366004611167565b600260208190525f9182526040909120805460018201549282015460038301546004840154600585015460068601546007909601546001600160a01b03958616978616969486169590931693919290919060ff1688565b604080516001600160a01b03998a168152978916602089015295881695870195909552959092166060850152608084015260a083015260c082019290925260ff90911660e082015261010001610115565b6101e76101e23660046111de565b6102fa565b604051908152602001610115565b610107600681565b6101e75f5481565b610107600481565b61022061021b366004611167565b6105d6565b005b610220610230366004611271565b6106dc565b6102206102433660046112c9565b61096f565b610107600581565b6101e761025e36600461130b565b610cfb565b610107600181565b6101075f81565b6102b7610280366004611167565b60036020525f9081526040902080546001909101546001600160a01b0381169060ff600160a01b8204811691600160a81b90041684565b604080519485526001600160a01b03909316602085015260ff9091169183019190915215156060820152608001610115565b610107600381565b6101e760015481565b5f6001600160a01b0388161580159061031c57506001600160a01b0388163314155b6103615760405162461bcd60e51b815260206004820152601160248201527020a1a81d103130b210383937bb34b232b960791b60448201526064015b60405180910390fd5b6001600160a01b0385166103b05760405162461bcd60e51b815260206004820152601660248201527520a1a81d103130b2103830bcb6b2b73a103a37b5b2b760511b6044820152606401610358565b4286116103ff5760405162461bcd60e51b815260206004820152601760248201527f4143503a2065787069727920696e2074686520706173740000000000000000006044820152606401610358565b5f5f815461040c9061139a565b9190508190559050604051806101000160405280336001600160a01b03168152602001896001600160a01b03168152602001886001600160a01b03168152602001866001600160a01b031681526020018781526020018581526020015f81526020015f60ff1681525060025f8381526020019081526020015f205f820151815f015f6101000a8154816001600160a01b0302191690836001600160a01b031602179055506020820151816001015f6101000a8154816001600160a01b0302191690836001600160a01b031602179055506040820151816002015f6101000a8154816001600160a01b0302191690836001600160a01b031602179055506060820151816003015f6101000a8154816001600160a01b0302191690836001600160a01b031602179055506080820151816004015560a0820151816005015560c0820151816006015560e0820151816007015f6101000a81548160ff021916908360ff160217905550905050876001600160a01b0316336001600160a01b0316827f102f3cd48307d8043258e131b0f81ac9bd20888729b3840c3e642adefa8f12ec8a89898c8a8a6040516105c3969594939291906113da565b60405180910390a4979650505050505050565b5f81815260026020526040902080546001600160a01b031661060a5760405162461bcd60e51b815260040161035890611420565b80600401544210156106515760405162461bcd60e51b815260206004820152601060248201526f1050d40e881b9bdd08195e1c1a5c995960821b6044820152606401610358565b6007810154600460ff9091161061069e5760405162461bcd60e51b81526020600482015260116024820152701050d40e881a9bd8881a5cc8199a5b985b607a1b6044820152606401610358565b600680820180545f909155906106b79084908490611005565b600382015482546106d79185916001600160a01b03918216911684611064565b505050565b5f84815260036020526040902060018101546001600160a01b03166107375760405162461bcd60e51b81526020600482015260116024820152704143503a206e6f2073756368206d656d6f60781b6044820152606401610358565b6001810154600160a81b900460ff16156107935760405162461bcd60e51b815260206004820152601860248201527f4143503a206d656d6f20616c7265616479207369676e656400000000000000006044820152606401610358565b80545f9081526002602052604090206001820154600160a01b900460ff1660031480156107c75750600781015460ff166003145b6108135760405162461bcd60e51b815260206004820152601860248201527f4143503a206e6f7468696e6720746f206576616c7561746500000000000000006044820152606401610358565b60028101545f906001600160a01b03161561083b5760028201546001600160a01b0316610847565b81546001600160a01b03165b9050336001600160a01b0382161461089a5760405162461bcd60e51b815260206004820152601660248201527520a1a81d103737ba103a34329032bb30b63ab0ba37b960511b6044820152606401610358565b60018301805460ff60a81b1916600160a81b179055604051339088907f6f5cc2b0e692818eb8656138236f1a0408ff9a8104169316726ad1864434ab7a906108e7908a908a908a9061144a565b60405180910390a36006820180545f909155861561093657835461090d90846004611005565b83546003840154600185015461093192916001600160a01b03908116911684611064565b610965565b835461094490846005611005565b83546003840154845461096592916001600160a01b03908116911684611064565b5050505050505050565b5f83815260026020526040902080546001600160a01b03166109a35760405162461bcd60e51b815260040161035890611420565b80546001600160a01b031633146109f25760405162461bcd60e51b81526020600482015260136024820152721050d40e881b9bdd081d1a194818db1a595b9d606a1b6044820152606401610358565b6007810154600260ff90911610610a425760405162461bcd60e51b81526020600482015260146024820152731050d40e88189d5919d95d081a5cc8199a5e195960621b6044820152606401610358565b80600401544210610a885760405162461bcd60e51b815260206004820152601060248201526f1050d40e881a9bd888195e1c1a5c995960821b6044820152606401610358565b60038101546001600160a01b03838116911614610ae75760405162461bcd60e51b815260206004820152601860248201527f4143503a2077726f6e67207061796d656e7420746f6b656e00000000000000006044820152606401610358565b600681018054600583018590559084905580841115610be1576001600160a01b0383166323b872dd3330610b1b858961146e565b6040516001600160e01b031960e086901b1681526001600160a01b03938416600482015292909116602483015260448201526064016020604051808303815f875af1158015610b6c573d5f5f3e3d5ffd5b505050506040513d601f19601f82011682018060405250810190610b909190611487565b610bdc5760405162461bcd60e51b815260206004820152601b60248201527f4143503a20657363726f77207472616e73666572206661696c656400000000006044820152606401610358565b610cb0565b83811115610cb0576001600160a01b03831663a9059cbb33610c03878561146e565b6040516001600160e01b031960e085901b1681526001600160a01b03909216600483015260248201526044016020604051808303815f875af1158015610c4b573d5f5f3e3d5ffd5b505050506040513d601f19601f82011682018060405250810190610c6f9190611487565b610cb05760405162461bcd60e51b81526020600482015260126024820152711050d40e881c99599d5b990819985a5b195960721b6044820152606401610358565b604080516001600160a01b03851681526020810186905286917f74f37e24047ef5ad02b6aac54caaf20e06c51585a911183b2c6f2db0d8d896cc910160405180910390a25050505050565b5f86815260026020526040812080546001600160a01b0316610d2f5760405162461bcd60e51b815260040161035890611420565b60018101546001600160a01b03163314610d835760405162461bcd60e51b815260206004820152601560248201527420a1a81d103737ba103a343290383937bb34b232b960591b6044820152606401610358565b80600401544210610dc95760405162461bcd60e51b815260206004820152601060248201526f1050d40e881a9bd888195e1c1a5c995960821b6044820152606401610358565b5f1960ff841601610dfe57600781015460ff1615610df95760405162461bcd60e51b8152600401610358906114a9565b610f11565b60011960ff841601610ea057600781015460ff161580610e255750600781015460ff166001145b610e415760405162461bcd60e51b8152600401610358906114a9565b5f8160050154118015610e5b575080600501548160060154145b610df95760405162461bcd60e51b81526020600482015260166024820152751050d40e88195cd8dc9bddc81b9bdd08199d5b99195960521b6044820152606401610358565b60021960ff841601610ed357600781015460ff16600214610df95760405162461bcd60e51b8152600401610358906114a9565b60405162461bcd60e51b81526020600482015260136024820152724143503a20626164206e65787420706861736560681b6044820152606401610358565b60015f8154610f1f9061139a565b9182905550604080516080810182528a815233602080830182815260ff808a168587019081525f6060870181815289825260039095528790209551865591516001959095018054925193511515600160a81b0260ff60a81b1994909216600160a01b026001600160a81b03199093166001600160a01b03969096169590951791909117919091161790915590519193509083908a907f381e3eaf04a5a852669794be872f175469d2108f5bd1b945acf432110cd22fcb90610fe7908a9089908e908e906114d3565b60405180910390a4610ffa888285611005565b509695505050505050565b60078201546040805160ff9283168152918316602083015284917f50e4abf18bf671d7422f6768965959c626f81b7b72d274a0a39c1580964d8cce910160405180910390a2600791909101805460ff191660ff90921691909117905550565b80156111615760405163a9059cbb60e01b81526001600160a01b0383811660048301526024820183905284169063a9059cbb906044016020604051808303815f875af11580156110b6573d5f5f3e3d5ffd5b505050506040513d601f19601f820116820180604052508101906110da9190611487565b61111c5760405162461bcd60e51b81526020600482015260136024820152721050d40e881c995b19585cd94819985a5b1959606a1b6044820152606401610358565b816001600160a01b0316847f6244ed823ca6be0f11bc890c3fafcf3c29cb23420c14243642e930b5e07e6d0a8360405161115891815260200190565b60405180910390a35b50505050565b5f60208284031215611177575f5ffd5b5035919050565b80356001600160a01b0381168114611194575f5ffd5b919050565b5f5f83601f8401126111a9575f5ffd5b50813567ffffffffffffffff8111156111c0575f5ffd5b6020830191508360208285010111156111d7575f5ffd5b9250929050565b5f5f5f5f5f5f5f60c0888a0312156111f4575f5ffd5b6111fd8861117e565b965061120b6020890161117e565b9550604088013594506112206060890161117e565b93506080880135925060a088013567ffffffffffffffff811115611242575f5ffd5b61124e8a828b01611199565b989b979a50959850939692959293505050565b801515811461126e575f5ffd5b50565b5f5f5f5f60608587031215611284575f5ffd5b84359350602085013561129681611261565b9250604085013567ffffffffffffffff8111156112b1575f5ffd5b6112bd87828801611199565b95989497509550505050565b5f5f5f606084860312156112db575f5ffd5b83359250602084013591506112f26040850161117e565b90509250925092565b803560ff81168114611194575f5ffd5b5f5f5f5f5f5f60a08789031215611320575f5ffd5b86359550602087013567ffffffffffffffff81111561133d575f5ffd5b61134989828a01611199565b909650945061135c9050604088016112fb565b9250606087013561136c81611261565b915061137a608088016112fb565b90509295509295509295565b634e487b7160e01b5f52601160045260245ffd5b5f600182016113ab576113ab611386565b5060010190565b81835281816020850137505f828201602090810191909152601f909101601f19169091010190565b6001600160a01b03878116825286166020820152604081018590526060810184905260a0608082018190525f9061141490830184866113b2565b98975050505050505050565b60208082526010908201526f20a1a81d1037379039bab1b4103537b160811b604082015260600190565b8315158152604060208201525f6114656040830184866113b2565b95945050505050565b8181038181111561148157611481611386565b92915050565b5f60208284031215611497575f5ffd5b81516114a281611261565b9392505050565b60208082526010908201526f4143503a2077726f6e6720706861736560801b604082015260600190565b60ff8516815260ff84166020820152606060408201525f6114f86060830184866113b2565b969550505050505056fea264697066735822122014db62be5db851be62186ff8da8d833d4e728d8f9fdb26e8e42d5f9fd85dab9064736f6c634300081c0033" as const
