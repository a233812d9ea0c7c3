/*
 * peer.js: what the interop scripts (ncs.js, device.js) share: the
 * library's listeners kept on loopback, "--key value" arguments, and one
 * JSON object per output line.
 */
'use strict';

const net = require('net');

/* The library listens on every interface; tests stay on loopback. */
function loopbackOnly() {
	const listen = net.Server.prototype.listen;

	net.Server.prototype.listen = function (...args) {
		if (typeof args[0] === 'number' &&
		    (args.length === 1 || typeof args[1] === 'function'))
			return listen.call(this, args[0], '127.0.0.1',
			    ...args.slice(1));
		return listen.apply(this, args);
	};
}

/* --key value pairs into an object; every key of required must be there. */
function parseArgs(argv, required) {
	const o = {};

	for (let i = 0; i < argv.length; i++) {
		const m = /^--([a-z-]+)$/.exec(argv[i]);

		if (!m || i + 1 >= argv.length)
			throw new Error(`bad argument: ${argv[i]}`);
		o[m[1]] = argv[++i];
	}
	for (const k of required) {
		if (o[k] === undefined)
			throw new Error(`missing --${k}`);
	}
	return o;
}

function emit(obj) {
	process.stdout.write(JSON.stringify(obj) + '\n');
}

module.exports = { loopbackOnly, parseArgs, emit };
