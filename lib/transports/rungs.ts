/**
 * Loads every cross-host rung module, each of which registers itself with ./remote. Imported
 * once by the chain and the server; a rung whose module is absent from this list is simply not
 * in this build.
 */
import './verbs'
import './rsocket'
import './smc'
import './sdp'
