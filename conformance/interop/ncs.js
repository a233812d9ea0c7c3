#!/usr/bin/env node
/*
 * ncs.js: @mos-connection/connector (Sofie's MOS library, pinned in
 * package.json) plays the NCS against a running mosgw.
 *
 * The library has no NCS mode (mos-protocol.md section 12), so it runs as a
 * MosConnection whose mosID is the gateway's mosID: connect() dials the
 * gateway's lower, upper and query ports and heartbeats on lower and upper;
 * acceptsConnections makes it listen on its own ports (bound to 127.0.0.1
 * here) for the gateway's outbound links, where the mosObj messages arrive.
 *
 * Steps: wait until the library says the primary is connected (heartbeats
 * answered), ask reqMachInfo, print {"event":"ready"}, then acknowledge every
 * mosObj the gateway publishes until --expect objects have arrived, then
 * send mosReqAll (pause 0) and wait for the mosListAll. Every step prints one
 * JSON object per line on stdout; the last line is {"event":"done","ok":...}.
 * The exit status is 0 when every step succeeded.
 *
 * Usage: node ncs.js --mos-id ID --ncs-id ID --gw-lower P --gw-upper P
 *        --gw-query P --lower P --upper P --query P [--expect N] [--timeout S]
 *        [--pause-req-all S]
 */
'use strict';

const { loopbackOnly, parseArgs, emit } = require('./peer');

loopbackOnly();

const {
	MosConnection, IMOSAckStatus, getMosTypes
} = require('@mos-connection/connector');

const types = getMosTypes(false);
const str = (v) => (v === undefined || v === null ? null : types.mosString128.stringify(v));

function sleep(ms) {
	return new Promise((resolve) => setTimeout(resolve, ms));
}

/* Poll cond() every 50 ms until it holds or the deadline passes. */
async function until(cond, deadline, what) {
	while (!cond()) {
		if (Date.now() > deadline)
			throw new Error(`timed out waiting for ${what}`);
		await sleep(50);
	}
}

function objectRecord(o) {
	return {
		objID: str(o.ID),
		objRev: o.Revision === undefined ? null : Number(o.Revision),
		status: o.Status === undefined ? null : String(o.Status),
		slug: str(o.Slug)
	};
}

async function main() {
	const a = parseArgs(process.argv.slice(2), ['mos-id', 'ncs-id',
	    'gw-lower', 'gw-upper', 'gw-query', 'lower', 'upper', 'query']);
	const expect = Number(a.expect || 0);
	const deadline = Date.now() + 1000 * Number(a.timeout || 40);
	const received = new Map();	/* objID -> newest record */
	const listed = [];		/* mosListAll batches */
	const errors = [];
	let pushes = 0;
	let reqAllSent = false;

	const conn = new MosConnection({
		mosID: a['mos-id'],
		acceptsConnections: true,
		profiles: { 0: true, 1: true },
		ports: {
			lower: Number(a.lower),
			upper: Number(a.upper),
			query: Number(a.query)
		},
		strict: false,
		debug: false
	});
	/* Every failure is an 'error' event: record it, never crash on it. */
	conn.on('error', (e) => errors.push(String(e)));
	conn.on('warning', (w) => process.stderr.write(`warning: ${w}\n`));
	conn.on('info', (m) => process.stderr.write(`info: ${m}\n`));

	await conn.init();
	const dev = await conn.connect({
		primary: {
			id: a['ncs-id'],
			host: '127.0.0.1',
			ports: {
				lower: Number(a['gw-lower']),
				upper: Number(a['gw-upper']),
				query: Number(a['gw-query'])
			},
			timeout: 3000,
			heartbeatInterval: 500
		}
	});
	dev.onRequestMachineInfo(async () => ({
		manufacturer: types.mosString128.create('sofie'),
		model: types.mosString128.create('mos-connection interop'),
		hwRev: types.mosString128.create(''),
		swRev: types.mosString128.create('4.1.1'),
		DOM: types.mosString128.create(''),
		SN: types.mosString128.create('1'),
		ID: types.mosString128.create('ncs.js'),
		time: types.mosTime.create(new Date()),
		mosRev: types.mosString128.create('2.8.5'),
		supportedProfiles: { deviceType: 'NCS', profile0: true, profile1: true }
	}));
	dev.onRequestMOSObject(async () => null);
	dev.onRequestAllMOSObjects(async () => []);
	dev.onMOSObjects(async (objs) => {
		/* After our mosReqAll, what arrives is its answer. */
		if (reqAllSent)
			listed.push(objs.map(objectRecord));
		for (const o of objs) {
			const r = objectRecord(o);

			if (!reqAllSent) {
				received.set(r.objID, r);
				emit({ event: 'object', ...r });
				pushes++;
			}
		}
		return {
			ID: objs.length === 1 ? objs[0].ID : types.mosString128.create('0'),
			Revision: objs.length === 1 ? objs[0].Revision || 0 : 0,
			Status: IMOSAckStatus.ACK,
			Description: types.mosString128.create('')
		};
	});

	/* Heartbeats: the library marks the primary connected once answered. */
	await until(() => dev.getConnectionStatus().PrimaryConnected, deadline,
	    'the primary connection');
	emit({ event: 'connected', status: dev.getConnectionStatus() });

	const info = await dev.requestMachineInfo();
	emit({
		event: 'machInfo',
		manufacturer: str(info.manufacturer),
		model: str(info.model),
		mosRev: str(info.mosRev),
		supportedProfiles: info.supportedProfiles
	});

	emit({ event: 'ready' });
	await until(() => received.size >= expect, deadline,
	    `${expect} objects (have ${received.size})`);
	emit({ event: 'objects', count: received.size, pushes });

	reqAllSent = true;
	const ack = await dev.sendRequestAllMOSObjects(Number(a['pause-req-all'] || 0));
	emit({ event: 'reqAllAck', status: String(ack.Status) });
	await until(() => listed.length > 0, deadline, 'the mosListAll');
	emit({ event: 'listAll', objects: listed[0] });

	/* Still connected after all that. */
	emit({ event: 'status', status: dev.getConnectionStatus() });
	await conn.dispose();
	return errors;
}

main().then((errors) => {
	emit({ event: 'done', ok: true, errors });
	process.exit(0);
}, (e) => {
	emit({ event: 'done', ok: false, error: String(e && e.message || e) });
	process.exit(1);
});
