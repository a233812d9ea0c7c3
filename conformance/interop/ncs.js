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
 * send mosReqAll (pause 0) and wait for the mosListAll. With --ro 1 it then
 * works a running order: roCreate, every roElementAction (insert, replace,
 * move, delete, swap of stories and of items), roStorySend, roReq (the
 * order printed as "S1[I1,I2] S2[]") and roReqAll. Every step prints one
 * JSON object per line on stdout; the last line is {"event":"done","ok":...}.
 * Then Profile 3: mosObjCreate, mosReqSearchableSchema and three
 * mosReqObjList (a page, a page past the end, a field search).
 * The exit status is 0 when every step succeeded.
 *
 * Usage: node ncs.js --mos-id ID --ncs-id ID --gw-lower P --gw-upper P
 *        --gw-query P --lower P --upper P --query P [--expect N] [--timeout S]
 *        [--pause-req-all S] [--ro 1]
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

/* A running order as "S1[I1,I2] S2[]". */
function roOrder(ro) {
	return (ro.Stories || []).map((s) => `${str(s.ID)}[` +
	    (s.Items || []).map((i) => str(i.ID)).join(',') + ']').join(' ');
}

/*
 * The roAck of a running-order step: its roStatus and the object statuses
 * as "storyID/objID=STATUS". (The library's roAck parser gives each item
 * the storyID as its ID, so the itemID is not shown.)
 */
function roAckRecord(step, ack) {
	const items = [];

	for (const s of ack.Stories || []) {
		for (const i of s.Items || []) {
			for (const o of i.Objects || [])
				items.push(`${str(s.ID)}/${str(o.ID)}=${String(o.Status)}`);
		}
	}
	return { event: 'roAck', step, roID: str(ack.ID), status: str(ack.Status), items };
}

/* Work a running order through every Profile 2 and 4 message we send. */
async function runningOrders(dev, mosID) {
	const s128 = (v) => types.mosString128.create(v);
	const item = (id, obj) => ({
		ID: s128(id), Slug: s128(`item ${id}`), ObjectID: s128(obj),
		MOSID: mosID, Channel: s128('A')
	});
	const story = (id, items) => ({ ID: s128(id), Slug: s128(`story ${id}`), Items: items });
	const RO = 'SOFIE-RO';
	const sa = (st) => ({ RunningOrderID: s128(RO), StoryID: s128(st) });
	const ia = (st, it) => ({ RunningOrderID: s128(RO), StoryID: s128(st), ItemID: s128(it) });
	const steps = [
		['roCreate', () => dev.sendCreateRunningOrder({
			ID: s128(RO), Slug: s128('Sofie running order'),
			Stories: [story('S1', [item('I1', 'SOFIE-1'), item('I2', 'NOPE')]),
			    story('S2', [item('I4', 'SOFIE-2')])]
		})],
		['insertStories', () => dev.sendROInsertStories(sa('S2'), [story('S3', [])])],
		['insertItems', () => dev.sendROInsertItems(ia('S1', 'I2'), [item('I3', 'SOFIE-3')])],
		['replaceStories', () => dev.sendROReplaceStories(sa('S3'), [story('S5', [item('I9', 'SOFIE-4')])])],
		['replaceItems', () => dev.sendROReplaceItems(ia('S1', 'I3'), [item('I6', 'SOFIE-5')])],
		['moveStories', () => dev.sendROMoveStories(sa('S1'), [s128('S2')])],
		['moveItems', () => dev.sendROMoveItems(ia('S1', 'I1'), [s128('I2')])],
		['swapStories', () => dev.sendROSwapStories({ RunningOrderID: s128(RO) }, s128('S5'), s128('S1'))],
		['swapItems', () => dev.sendROSwapItems(sa('S1'), s128('I2'), s128('I6'))],
		['deleteItems', () => dev.sendRODeleteItems(sa('S1'), [s128('I1')])],
		['deleteStories', () => dev.sendRODeleteStories({ RunningOrderID: s128(RO) }, [s128('S5')])],
		['storySend', () => dev.sendRunningOrderStory({
			ID: s128('S1'), RunningOrderId: s128(RO), Slug: s128('story S1'),
			Body: [{ Type: 'p', Content: 'Words for the presenter.' }]
		})]
	];

	for (const [name, fn] of steps)
		emit(roAckRecord(name, await fn()));
	const ro = await dev.sendRequestRunningOrder(s128(RO));
	emit({ event: 'roList', roID: str(ro.ID), slug: str(ro.Slug), order: roOrder(ro) });
	const all = await dev.sendRequestAllRunningOrders();
	emit({ event: 'roListAll', roIDs: all.map((r) => str(r.ID)) });
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
		profiles: { 0: true, 1: true, 2: a.ro === '1', 4: a.ro === '1' },
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
		supportedProfiles: { deviceType: 'NCS', profile0: true, profile1: true,
		    profile3: true }
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

	if (a.ro === '1')
		await runningOrders(dev, a['mos-id']);

	/*
	 * Profile 3: a placeholder (lower port), then the searchable schema
	 * and searches (the library sends those on the query port).
	 */
	const created = await dev.sendObjectCreate({
		Slug: types.mosString128.create('Interop placeholder'),
		Type: 'VIDEO',
		TimeBase: 50,
		Duration: 250,
		CreatedBy: types.mosString128.create('ncs.js')
	});
	emit({
		event: 'objCreate',
		status: String(created.Status),
		objID: str(created.ID),
		objRev: Number(created.Revision)
	});
	const schema = await dev.sendRequestSearchableSchema('jdoe');
	emit({ event: 'schema', reply: schema });
	const search = async (event, query) => {
		const l = await dev.sendRequestObjectList({
			username: 'jdoe',
			queryID: event,
			mosSchema: 'urn:mosgw:search:1',
			searchGroups: [],
			...query
		});

		emit({
			event,
			queryID: l.queryID === undefined ? null : String(l.queryID),
			total: Number(l.listReturnTotal),
			start: Number(l.listReturnStart),
			end: Number(l.listReturnEnd),
			status: l.listReturnStatus === undefined ? null :
			    String(l.listReturnStatus),
			objects: (l.list || []).map(objectRecord)
		});
	};
	await search('search', { listReturnStart: 1, listReturnEnd: 3,
	    generalSearch: 'published sofie' });
	await search('searchPast', { listReturnStart: 50, listReturnEnd: 60,
	    generalSearch: 'published' });
	await search('searchField', { listReturnStart: 1, listReturnEnd: 10,
	    generalSearch: '', searchGroups: [{ searchFields: [
		{ XPath: "/objSlug[.='interop placeholder']", sortByOrder: 1 }] }] });

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
