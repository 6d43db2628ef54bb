/**
 * Generated from Enforcers.sol by scripts/compile-contracts.ts with solc-js 0.8.28+commit.7893614a.Emscripten.clang
 * (optimizer on, 200 runs, evm cancun). Do not edit by hand:
 * change the source and run `npm run contracts:compile`.
 */
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

export const transferCapEnforcerBytecode = "0x6080604052348015600e575f5ffd5b506107818061001c5f395ff3fe608060405234801561000f575f5ffd5b5060043610610055575f3560e01c8063414c3e3314610059578063a145832a14610075578063d37052c914610088578063d3eddcc514610059578063ed46336714610059575b5f5ffd5b610073610067366004610520565b50505050505050505050565b005b610073610083366004610520565b6100b6565b61009b6100963660046105f0565b61019c565b60408051921515835260208301919091520160405180910390f35b6001600160f81b03198616156101215760405162461bcd60e51b815260206004820152602560248201527f5472616e73666572436170456e666f726365723a696e76616c69642d63616c6c6044820152642d7479706560d81b60648201526084015b60405180910390fd5b6001600160f81b0319600887901b16156101905760405162461bcd60e51b815260206004820152602a60248201527f5472616e73666572436170456e666f726365723a696e76616c69642d657865636044820152697574696f6e2d7479706560b01b6064820152608401610118565b6100678a8a8787610246565b5f80805b846101ac826034610640565b11610236576001600160a01b0384168682876101c9826014610640565b926101d693929190610665565b6101df9161068c565b60601c0361022457600186866101f6846014610640565b90610202856034610640565b9261020f93929190610665565b610218916106d9565b5f1c925092505061023e565b61022f603482610640565b90506101a0565b505f5f915091505b935093915050565b821580159061025d575061025b6034846106f6565b155b6102ba5760405162461bcd60e51b815260206004820152602860248201527f5472616e73666572436170456e666f726365723a696e76616c69642d7465726d6044820152670e65ad8cadccee8d60c31b6064820152608401610118565b60348110156103205760405162461bcd60e51b815260206004820152602c60248201527f5472616e73666572436170456e666f726365723a696e76616c69642d6578656360448201526b0eae8d2dedc5ad8cadccee8d60a31b6064820152608401610118565b365f61032f8360348187610665565b9092509050604481148015610369575063a9059cbb60e01b61035460045f8486610665565b61035d91610715565b6001600160e01b031916145b6103c05760405162461bcd60e51b815260206004820152602260248201527f5472616e73666572436170456e666f726365723a696e76616c69642d6d6574686044820152611bd960f21b6064820152608401610118565b5f806103e588886103d46014858a8c610665565b6103dd9161068c565b60601c61019c565b91509150816104445760405162461bcd60e51b815260206004820152602560248201527f5472616e73666572436170456e666f726365723a746f6b656e2d6e6f742d616c6044820152641b1bddd95960da1b6064820152608401610118565b80610453604460248688610665565b61045c916106d9565b11156104b65760405162461bcd60e51b815260206004820152602360248201527f5472616e73666572436170456e666f726365723a616d6f756e742d657863656560448201526219195960ea1b6064820152608401610118565b5050505050505050565b5f5f83601f8401126104d0575f5ffd5b50813567ffffffffffffffff8111156104e7575f5ffd5b6020830191508360208285010111156104fe575f5ffd5b9250929050565b80356001600160a01b038116811461051b575f5ffd5b919050565b5f5f5f5f5f5f5f5f5f5f60e08b8d031215610539575f5ffd5b8a3567ffffffffffffffff81111561054f575f5ffd5b61055b8d828e016104c0565b909b5099505060208b013567ffffffffffffffff81111561057a575f5ffd5b6105868d828e016104c0565b90995097505060408b0135955060608b013567ffffffffffffffff8111156105ac575f5ffd5b6105b88d828e016104c0565b90965094505060808b013592506105d160a08c01610505565b91506105df60c08c01610505565b90509295989b9194979a5092959850565b5f5f5f60408486031215610602575f5ffd5b833567ffffffffffffffff811115610618575f5ffd5b610624868287016104c0565b9094509250610637905060208501610505565b90509250925092565b8082018082111561065f57634e487b7160e01b5f52601160045260245ffd5b92915050565b5f5f85851115610673575f5ffd5b8386111561067f575f5ffd5b5050820193919092039150565b80356bffffffffffffffffffffffff1981169060148410156106d2576bffffffffffffffffffffffff196bffffffffffffffffffffffff198560140360031b1b82161691505b5092915050565b8035602083101561065f575f19602084900360031b1b1692915050565b5f8261071057634e487b7160e01b5f52601260045260245ffd5b500690565b80356001600160e01b031981169060048410156106d2576001600160e01b031960049490940360031b84901b169092169291505056fea26469706673582212205dc90f7d19f9812643488dc1c6f0b51dd863ef6bee544e54171a641ac00f1b1764736f6c634300081c0033" as const
