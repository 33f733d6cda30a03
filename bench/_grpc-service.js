'use strict'
// The gRPC service of bench/grpc.js and test/transparency/grpc.test.js: raw bytes (no protobuf,
// so the figures are the transport's and grpc-js's, not a serializer's).
//   Unary         echoes the request
//   ServerStream  request: u32 count, u32 size; answers count messages of size bytes
//   ClientStream  answers the total byte count (u32) of the messages it got
//   Bidi          echoes every message
//   Info          answers JSON { transport, cpuUs } of the server process
const grpc = require('@grpc/grpc-js')
const id = b => b
const method = (name, requestStream, responseStream) => ({
  path: `/fastsock.Bench/${name}`,
  requestStream,
  responseStream,
  requestSerialize: id,
  requestDeserialize: id,
  responseSerialize: id,
  responseDeserialize: id
})
const definition = {
  Unary: method('Unary', false, false),
  ServerStream: method('ServerStream', false, true),
  ClientStream: method('ClientStream', true, false),
  Bidi: method('Bidi', true, true),
  Info: method('Info', false, false)
}

/** The handlers; info() gives the Info method's JSON. */
function implementation (info) {
  return {
    Unary: (call, cb) => cb(null, call.request),
    ServerStream: call => {
      const count = call.request.readUInt32LE(0)
      const msg = Buffer.alloc(call.request.readUInt32LE(4), 1)
      let i = 0
      const more = () => {
        while (i < count) {
          i++
          if (!call.write(msg)) return call.once('drain', more)
        }
        call.end()
      }
      more()
    },
    ClientStream: (call, cb) => {
      let n = 0
      call.on('data', d => { n += d.length })
      call.on('end', () => { const b = Buffer.alloc(4); b.writeUInt32LE(n); cb(null, b) })
    },
    Bidi: call => {
      call.on('data', d => call.write(d))
      call.on('end', () => call.end())
    },
    Info: (call, cb) => cb(null, Buffer.from(JSON.stringify(info())))
  }
}

const Client = grpc.makeGenericClientConstructor(definition, 'Bench')

/** Promisified calls on a client. */
function calls (client) {
  return {
    unary: buf => new Promise((resolve, reject) => client.Unary(buf, (err, r) => err ? reject(err) : resolve(r))),
    info: () => new Promise((resolve, reject) => client.Info(Buffer.alloc(0), (err, r) => err ? reject(err) : resolve(JSON.parse(String(r))))),
    serverStream: (count, size) => new Promise((resolve, reject) => {
      const req = Buffer.alloc(8)
      req.writeUInt32LE(count, 0)
      req.writeUInt32LE(size, 4)
      let n = 0
      let bytes = 0
      const call = client.ServerStream(req)
      call.on('data', d => { n++; bytes += d.length })
      call.on('error', reject)
      call.on('end', () => resolve({ messages: n, bytes }))
    }),
    clientStream: chunks => new Promise((resolve, reject) => {
      const call = client.ClientStream((err, r) => err ? reject(err) : resolve(r.readUInt32LE(0)))
      for (const c of chunks) call.write(c)
      call.end()
    })
  }
}

module.exports = { grpc, definition, implementation, Client, calls }
