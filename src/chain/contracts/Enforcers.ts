/**
 * Generated from Enforcers.sol by scripts/compile-contracts.ts with solc-js 0.8.28+commit.7893614a.Emscripten.clang
 * (optimizer on, 200 runs, evm cancun). Do not edit by hand:
 * change the source and run `npm run contracts:compile`.
 */
export const argumentCapEnforcerAbi = [
  {
    "anonymous": false,
    "inputs": [
      {
        "indexed": true,
        "internalType": "address",
        "name": "sender",
        "type": "address"
      },
      {
        "indexed": true,
        "internalType": "bytes32",
        "name": "delegationHash",
        "type": "bytes32"
      },
      {
        "indexed": false,
        "internalType": "bytes4",
        "name": "selector",
        "type": "bytes4"
      },
      {
        "indexed": false,
        "internalType": "uint256",
        "name": "value",
        "type": "uint256"
      },
      {
        "indexed": false,
        "internalType": "uint256",
        "name": "total",
        "type": "uint256"
      }
    ],
    "name": "ArgumentCounted",
    "type": "event"
  },
  {
    "inputs": [
      {
        "internalType": "bytes",
        "name": "",
        "type": "bytes"
      },
      {
        "internalType": "bytes",
        "name": "",
        "type": "bytes"
      },
      {
        "internalType": "bytes32",
        "name": "",
        "type": "bytes32"
      },
      {
        "internalType": "bytes",
        "name": "",
        "type": "bytes"
      },
      {
        "internalType": "bytes32",
        "name": "",
        "type": "bytes32"
      },
      {
        "internalType": "address",
        "name": "",
        "type": "address"
      },
      {
        "internalType": "address",
        "name": "",
        "type": "address"
      }
    ],
    "name": "afterAllHook",
    "outputs": [],
    "stateMutability": "pure",
    "type": "function"
  },
  {
    "inputs": [
      {
        "internalType": "bytes",
        "name": "",
        "type": "bytes"
      },
      {
        "internalType": "bytes",
        "name": "",
        "type": "bytes"
      },
      {
        "internalType": "bytes32",
        "name": "",
        "type": "bytes32"
      },
      {
        "internalType": "bytes",
        "name": "",
        "type": "bytes"
      },
      {
        "internalType": "bytes32",
        "name": "",
        "type": "bytes32"
      },
      {
        "internalType": "address",
        "name": "",
        "type": "address"
      },
      {
        "internalType": "address",
        "name": "",
        "type": "address"
      }
    ],
    "name": "afterHook",
    "outputs": [],
    "stateMutability": "pure",
    "type": "function"
  },
  {
    "inputs": [
      {
        "internalType": "bytes",
        "name": "",
        "type": "bytes"
      },
      {
        "internalType": "bytes",
        "name": "",
        "type": "bytes"
      },
      {
        "internalType": "bytes32",
        "name": "",
        "type": "bytes32"
      },
      {
        "internalType": "bytes",
        "name": "",
        "type": "bytes"
      },
      {
        "internalType": "bytes32",
        "name": "",
        "type": "bytes32"
      },
      {
        "internalType": "address",
        "name": "",
        "type": "address"
      },
      {
        "internalType": "address",
        "name": "",
        "type": "address"
      }
    ],
    "name": "beforeAllHook",
    "outputs": [],
    "stateMutability": "pure",
    "type": "function"
  },
  {
    "inputs": [
      {
        "internalType": "bytes",
        "name": "_terms",
        "type": "bytes"
      },
      {
        "internalType": "bytes",
        "name": "",
        "type": "bytes"
      },
      {
        "internalType": "bytes32",
        "name": "_mode",
        "type": "bytes32"
      },
      {
        "internalType": "bytes",
        "name": "_executionCallData",
        "type": "bytes"
      },
      {
        "internalType": "bytes32",
        "name": "_delegationHash",
        "type": "bytes32"
      },
      {
        "internalType": "address",
        "name": "",
        "type": "address"
      },
      {
        "internalType": "address",
        "name": "",
        "type": "address"
      }
    ],
    "name": "beforeHook",
    "outputs": [],
    "stateMutability": "nonpayable",
    "type": "function"
  },
  {
    "inputs": [
      {
        "internalType": "bytes",
        "name": "_terms",
        "type": "bytes"
      }
    ],
    "name": "getTermsInfo",
    "outputs": [
      {
        "internalType": "uint256",
        "name": "offset_",
        "type": "uint256"
      },
      {
        "internalType": "uint256",
        "name": "maxPerCall_",
        "type": "uint256"
      },
      {
        "internalType": "uint256",
        "name": "maxTotal_",
        "type": "uint256"
      }
    ],
    "stateMutability": "pure",
    "type": "function"
  },
  {
    "inputs": [
      {
        "internalType": "address",
        "name": "",
        "type": "address"
      },
      {
        "internalType": "bytes32",
        "name": "",
        "type": "bytes32"
      },
      {
        "internalType": "bytes4",
        "name": "",
        "type": "bytes4"
      }
    ],
    "name": "totals",
    "outputs": [
      {
        "internalType": "uint256",
        "name": "",
        "type": "uint256"
      }
    ],
    "stateMutability": "view",
    "type": "function"
  }
] as const

export const argumentCapEnforcerBytecode = "0x6080604052348015600e575f5ffd5b506107d68061001c5f395ff3fe608060405234801561000f575f5ffd5b5060043610610060575f3560e01c8063414c3e33146100645780636498954e14610080578063a145832a146100c2578063b99deb0e146100d5578063d3eddcc514610064578063ed46336714610064575b5f5ffd5b61007e6100723660046105a7565b50505050505050505050565b005b6100af61008e366004610677565b5f602081815293815260408082208552928152828120909352825290205481565b6040519081526020015b60405180910390f35b61007e6100d03660046105a7565b610103565b6100e86100e33660046106c0565b610490565b604080519384526020840192909252908201526060016100b9565b6001600160f81b031986161561016e5760405162461bcd60e51b815260206004820152602560248201527f417267756d656e74436170456e666f726365723a696e76616c69642d63616c6c6044820152642d7479706560d81b60648201526084015b60405180910390fd5b6001600160f81b0319600887901b16156101dd5760405162461bcd60e51b815260206004820152602a60248201527f417267756d656e74436170456e666f726365723a696e76616c69642d657865636044820152697574696f6e2d7479706560b01b6064820152608401610165565b5f5f5f6101ea8d8d610490565b9194509250905060348710156102575760405162461bcd60e51b815260206004820152602c60248201527f417267756d656e74436170456e666f726365723a696e76616c69642d6578656360448201526b0eae8d2dedc5ad8cadccee8d60a31b6064820152608401610165565b365f610266896034818d6106ff565b91509150600485101580156102855750610281856020610726565b8110155b6102dd5760405162461bcd60e51b8152602060048201526024808201527f417267756d656e74436170456e666f726365723a617267756d656e742d6d697360448201526373696e6760e01b6064820152608401610165565b5f6102eb60048284866106ff565b6102f49161074b565b90505f838784610305826020610726565b92610312939291906106ff565b61031b91610783565b90508581111561037b5760405162461bcd60e51b815260206004820152602560248201527f417267756d656e74436170456e666f726365723a7065722d63616c6c2d657863604482015264195959195960da1b6064820152608401610165565b335f908152602081815260408083208d845282528083206001600160e01b0319861684529091528120546103b0908390610726565b90508581111561040d5760405162461bcd60e51b815260206004820152602260248201527f417267756d656e74436170456e666f726365723a746f74616c2d657863656564604482015261195960f21b6064820152608401610165565b335f818152602081815260408083208f845282528083206001600160e01b0319881680855290835292819020859055805192835290820185905281018390528c91907f5ec9ea6abeee2d64f0884a026d0c4969c89800e02444cdf040ad37d86d9407d39060600160405180910390a3505050505050505050505050505050505050565b5f8080606084146104f45760405162461bcd60e51b815260206004820152602860248201527f417267756d656e74436170456e666f726365723a696e76616c69642d7465726d6044820152670e65ad8cadccee8d60c31b6064820152608401610165565b61050160205f86886106ff565b61050a91610783565b925061051a6040602086886106ff565b61052391610783565b91506105336060604086886106ff565b61053c91610783565b5f1c90509250925092565b5f5f83601f840112610557575f5ffd5b50813567ffffffffffffffff81111561056e575f5ffd5b602083019150836020828501011115610585575f5ffd5b9250929050565b80356001600160a01b03811681146105a2575f5ffd5b919050565b5f5f5f5f5f5f5f5f5f5f60e08b8d0312156105c0575f5ffd5b8a3567ffffffffffffffff8111156105d6575f5ffd5b6105e28d828e01610547565b909b5099505060208b013567ffffffffffffffff811115610601575f5ffd5b61060d8d828e01610547565b90995097505060408b0135955060608b013567ffffffffffffffff811115610633575f5ffd5b61063f8d828e01610547565b90965094505060808b0135925061065860a08c0161058c565b915061066660c08c0161058c565b90509295989b9194979a5092959850565b5f5f5f60608486031215610689575f5ffd5b6106928461058c565b92506020840135915060408401356001600160e01b0319811681146106b5575f5ffd5b809150509250925092565b5f5f602083850312156106d1575f5ffd5b823567ffffffffffffffff8111156106e7575f5ffd5b6106f385828601610547565b90969095509350505050565b5f5f8585111561070d575f5ffd5b83861115610719575f5ffd5b5050820193919092039150565b8082018082111561074557634e487b7160e01b5f52601160045260245ffd5b92915050565b80356001600160e01b0319811690600484101561077c576001600160e01b0319600485900360031b81901b82161691505b5092915050565b80356020831015610745575f19602084900360031b1b169291505056fea264697066735822122069cc316fca0396ff78c24668e6183f45cd681296c5d9c72aa3be2c2c453e096e64736f6c634300081c0033" as const

export const transferCapEnforcerAbi = [
  {
    "inputs": [
      {
        "internalType": "bytes",
        "name": "",
        "type": "bytes"
      },
      {
        "internalType": "bytes",
        "name": "",
        "type": "bytes"
      },
      {
        "internalType": "bytes32",
        "name": "",
        "type": "bytes32"
      },
      {
        "internalType": "bytes",
        "name": "",
        "type": "bytes"
      },
      {
        "internalType": "bytes32",
        "name": "",
        "type": "bytes32"
      },
      {
        "internalType": "address",
        "name": "",
        "type": "address"
      },
      {
        "internalType": "address",
        "name": "",
        "type": "address"
      }
    ],
    "name": "afterAllHook",
    "outputs": [],
    "stateMutability": "pure",
    "type": "function"
  },
  {
    "inputs": [
      {
        "internalType": "bytes",
        "name": "",
        "type": "bytes"
      },
      {
        "internalType": "bytes",
        "name": "",
        "type": "bytes"
      },
      {
        "internalType": "bytes32",
        "name": "",
        "type": "bytes32"
      },
      {
        "internalType": "bytes",
        "name": "",
        "type": "bytes"
      },
      {
        "internalType": "bytes32",
        "name": "",
        "type": "bytes32"
      },
      {
        "internalType": "address",
        "name": "",
        "type": "address"
      },
      {
        "internalType": "address",
        "name": "",
        "type": "address"
      }
    ],
    "name": "afterHook",
    "outputs": [],
    "stateMutability": "pure",
    "type": "function"
  },
  {
    "inputs": [
      {
        "internalType": "bytes",
        "name": "",
        "type": "bytes"
      },
      {
        "internalType": "bytes",
        "name": "",
        "type": "bytes"
      },
      {
        "internalType": "bytes32",
        "name": "",
        "type": "bytes32"
      },
      {
        "internalType": "bytes",
        "name": "",
        "type": "bytes"
      },
      {
        "internalType": "bytes32",
        "name": "",
        "type": "bytes32"
      },
      {
        "internalType": "address",
        "name": "",
        "type": "address"
      },
      {
        "internalType": "address",
        "name": "",
        "type": "address"
      }
    ],
    "name": "beforeAllHook",
    "outputs": [],
    "stateMutability": "pure",
    "type": "function"
  },
  {
    "inputs": [
      {
        "internalType": "bytes",
        "name": "_terms",
        "type": "bytes"
      },
      {
        "internalType": "bytes",
        "name": "",
        "type": "bytes"
      },
      {
        "internalType": "bytes32",
        "name": "_mode",
        "type": "bytes32"
      },
      {
        "internalType": "bytes",
        "name": "_executionCallData",
        "type": "bytes"
      },
      {
        "internalType": "bytes32",
        "name": "",
        "type": "bytes32"
      },
      {
        "internalType": "address",
        "name": "",
        "type": "address"
      },
      {
        "internalType": "address",
        "name": "",
        "type": "address"
      }
    ],
    "name": "beforeHook",
    "outputs": [],
    "stateMutability": "pure",
    "type": "function"
  },
  {
    "inputs": [
      {
        "internalType": "bytes",
        "name": "_terms",
        "type": "bytes"
      },
      {
        "internalType": "address",
        "name": "_token",
        "type": "address"
      }
    ],
    "name": "capOf",
    "outputs": [
      {
        "internalType": "bool",
        "name": "found_",
        "type": "bool"
      },
      {
        "internalType": "uint256",
        "name": "cap_",
        "type": "uint256"
      }
    ],
    "stateMutability": "pure",
    "type": "function"
  }
] as const

export const transferCapEnforcerBytecode = "0x6080604052348015600e575f5ffd5b506107818061001c5f395ff3fe608060405234801561000f575f5ffd5b5060043610610055575f3560e01c8063414c3e3314610059578063a145832a14610075578063d37052c914610088578063d3eddcc514610059578063ed46336714610059575b5f5ffd5b610073610067366004610520565b50505050505050505050565b005b610073610083366004610520565b6100b6565b61009b6100963660046105f0565b61019c565b60408051921515835260208301919091520160405180910390f35b6001600160f81b03198616156101215760405162461bcd60e51b815260206004820152602560248201527f5472616e73666572436170456e666f726365723a696e76616c69642d63616c6c6044820152642d7479706560d81b60648201526084015b60405180910390fd5b6001600160f81b0319600887901b16156101905760405162461bcd60e51b815260206004820152602a60248201527f5472616e73666572436170456e666f726365723a696e76616c69642d657865636044820152697574696f6e2d7479706560b01b6064820152608401610118565b6100678a8a8787610246565b5f80805b846101ac826034610640565b11610236576001600160a01b0384168682876101c9826014610640565b926101d693929190610665565b6101df9161068c565b60601c0361022457600186866101f6846014610640565b90610202856034610640565b9261020f93929190610665565b610218916106d9565b5f1c925092505061023e565b61022f603482610640565b90506101a0565b505f5f915091505b935093915050565b821580159061025d575061025b6034846106f6565b155b6102ba5760405162461bcd60e51b815260206004820152602860248201527f5472616e73666572436170456e666f726365723a696e76616c69642d7465726d6044820152670e65ad8cadccee8d60c31b6064820152608401610118565b60348110156103205760405162461bcd60e51b815260206004820152602c60248201527f5472616e73666572436170456e666f726365723a696e76616c69642d6578656360448201526b0eae8d2dedc5ad8cadccee8d60a31b6064820152608401610118565b365f61032f8360348187610665565b9092509050604481148015610369575063a9059cbb60e01b61035460045f8486610665565b61035d91610715565b6001600160e01b031916145b6103c05760405162461bcd60e51b815260206004820152602260248201527f5472616e73666572436170456e666f726365723a696e76616c69642d6d6574686044820152611bd960f21b6064820152608401610118565b5f806103e588886103d46014858a8c610665565b6103dd9161068c565b60601c61019c565b91509150816104445760405162461bcd60e51b815260206004820152602560248201527f5472616e73666572436170456e666f726365723a746f6b656e2d6e6f742d616c6044820152641b1bddd95960da1b6064820152608401610118565b80610453604460248688610665565b61045c916106d9565b11156104b65760405162461bcd60e51b815260206004820152602360248201527f5472616e73666572436170456e666f726365723a616d6f756e742d657863656560448201526219195960ea1b6064820152608401610118565b5050505050505050565b5f5f83601f8401126104d0575f5ffd5b50813567ffffffffffffffff8111156104e7575f5ffd5b6020830191508360208285010111156104fe575f5ffd5b9250929050565b80356001600160a01b038116811461051b575f5ffd5b919050565b5f5f5f5f5f5f5f5f5f5f60e08b8d031215610539575f5ffd5b8a3567ffffffffffffffff81111561054f575f5ffd5b61055b8d828e016104c0565b909b5099505060208b013567ffffffffffffffff81111561057a575f5ffd5b6105868d828e016104c0565b90995097505060408b0135955060608b013567ffffffffffffffff8111156105ac575f5ffd5b6105b88d828e016104c0565b90965094505060808b013592506105d160a08c01610505565b91506105df60c08c01610505565b90509295989b9194979a5092959850565b5f5f5f60408486031215610602575f5ffd5b833567ffffffffffffffff811115610618575f5ffd5b610624868287016104c0565b9094509250610637905060208501610505565b90509250925092565b8082018082111561065f57634e487b7160e01b5f52601160045260245ffd5b92915050565b5f5f85851115610673575f5ffd5b8386111561067f575f5ffd5b5050820193919092039150565b80356bffffffffffffffffffffffff1981169060148410156106d2576bffffffffffffffffffffffff196bffffffffffffffffffffffff198560140360031b1b82161691505b5092915050565b8035602083101561065f575f19602084900360031b1b1692915050565b5f8261071057634e487b7160e01b5f52601260045260245ffd5b500690565b80356001600160e01b031981169060048410156106d2576001600160e01b031960049490940360031b84901b169092169291505056fea26469706673582212207fb39a006e9968e66fda857d1e4939df6997341dac688e670d459fc769e82b8d64736f6c634300081c0033" as const
