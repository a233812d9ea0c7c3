#!/usr/bin/env node
/*
 * device.js: @mos-connection/connector (Sofie's MOS library, pinned in
 * package.json) as a MOS device with Profiles 0-4, for the conformance
 * scenarios of fixtures/scenarios/ (mosreplay play --device).
 *
 * It listens on 127.0.0.1 on the ports given for the NCS of the scenarios.
 * The library only answers an NCS it knows, and knows one only by
 * connecting to it: it is given the NCS's ports --ncs-lower and --ncs-upper,
 * where nobody needs to listen (it retries in the background). It holds the
 * scenarios' object CONF-1 and keeps running orders in memory; each handler
 * answers as the spec asks, so that what differs is the library's doing.
 *
 * Prints {"event":"ready"} once listening; runs until SIGTERM or SIGINT.
 *
 * Usage: node device.js --mos-id ID --ncs-id ID --lower P --upper P --query P
 *        --ncs-lower P --ncs-upper P
 */
'use strict';

const { loopbackOnly, parseArgs, emit } = require('./peer');

loopbackOnly();

const {
	MosConnection, IMOSAckStatus, IMOSObjectType, IMOSObjectStatus,
	IMOSObjectAirStatus, IMOSObjectPathType, getMosTypes
} = require('@mos-connection/connector');

const types = getMosTypes(false);
const s128 = (v) => types.mosString128.create(v);
const str = (v) => (v === undefined || v === null ? '' : types.mosString128.stringify(v));

/* The object the scenarios ask for (conformance/README.md). */
const created = types.mosTime.create(new Date());
const conf1 = {
	ID: s128('CONF-1'),
	Slug: s128('Conformance clip'),
	Type: IMOSObjectType.VIDEO,
	TimeBase: 50,
	Revision: 1,
	Duration: 1500,
	Status: IMOSObjectStatus.NEW,
	AirStatus: IMOSObjectAirStatus.READY,
	Paths: [{
		Type: IMOSObjectPathType.PATH,
		Description: 'H.264',
		Target: 'http://media.example/conf-1.mp4'
	}],
	CreatedBy: s128('conformance'),
	Created: created,
	ChangedBy: s128('conformance'),
	Changed: created,
	Description: 'Clip used by the conformance suite'
};

const runningOrders = new Map();

function roAck(id, status) {
	return { ID: s128(str(id)), Status: s128(status || 'OK'), Stories: [] };
}

function ack(id, ok, text) {
	return {
		ID: s128(id || '0'),
		Revision: 0,
		Status: ok ? IMOSAckStatus.ACK : IMOSAckStatus.NACK,
		Description: s128(text || '')
	};
}

/* Every handler the library has for Profiles 0-4. */
function serve(dev) {
	dev.onRequestMachineInfo(async () => ({
		manufacturer: s128('sofie'),
		model: s128('mos-connection device'),
		hwRev: s128(''),
		swRev: s128('4.1.1'),
		DOM: s128(''),
		SN: s128('1'),
		ID: s128('device.js'),
		time: types.mosTime.create(new Date()),
		opTime: created,
		mosRev: s128('2.8.5'),
		supportedProfiles: {
			deviceType: 'MOS', profile0: true, profile1: true,
			profile2: true, profile3: true, profile4: true,
			profile5: false, profile6: false, profile7: false
		}
	}));
	dev.onRequestMOSObject(async (id) => (str(id) === 'CONF-1' ? conf1 : null));
	dev.onRequestAllMOSObjects(async () => [conf1]);
	dev.onMOSObjects(async () => ack('0', true));
	dev.onCreateRunningOrder(async (ro) => {
		runningOrders.set(str(ro.ID), ro);
		return roAck(ro.ID);
	});
	dev.onReplaceRunningOrder(async (ro) => {
		runningOrders.set(str(ro.ID), ro);
		return roAck(ro.ID);
	});
	dev.onDeleteRunningOrder(async (id) => {
		runningOrders.delete(str(id));
		return roAck(id);
	});
	dev.onRequestRunningOrder(async (id) => runningOrders.get(str(id)) || null);
	dev.onMetadataReplace(async (md) => roAck(md.ID));
	dev.onRunningOrderStatus(async (st) => roAck(st.ID));
	dev.onStoryStatus(async (st) => roAck(st.RunningOrderId));
	dev.onItemStatus(async (st) => roAck(st.RunningOrderId));
	dev.onReadyToAir(async (a) => roAck(a.ID));
	for (const h of ['onROInsertStories', 'onROInsertItems',
	    'onROReplaceStories', 'onROReplaceItems', 'onROMoveStories',
	    'onROMoveItems', 'onRODeleteStories', 'onRODeleteItems',
	    'onROSwapStories', 'onROSwapItems'])
		dev[h](async (action) => roAck(action.RunningOrderID));
	dev.onObjectCreate(async () => ack('CONF-NEW', true));
	dev.onItemReplace(async (roID) => roAck(roID));
	dev.onRequestSearchableSchema(async (username) => ({
		username, mosSchema: 'http://media.example/schema'
	}));
	dev.onRequestObjectList(async (q) => ({
		username: q.username,
		queryID: q.queryID,
		listReturnStart: 1,
		listReturnEnd: 1,
		listReturnTotal: 1,
		list: [conf1]
	}));
	dev.onRequestObjectActionNew(async () => ack('CONF-NEW', true));
	dev.onRequestObjectActionUpdate(async (id) => ack(str(id), true));
	dev.onRequestObjectActionDelete(async (id) => ack(str(id), true));
	dev.onRequestAllRunningOrders(async () => [...runningOrders.values()]);
	dev.onRunningOrderStory(async (story) => roAck(story.RunningOrderId,
	    runningOrders.has(str(story.RunningOrderId)) ? 'OK' :
	    'Unknown running order'));
}

async function main() {
	const a = parseArgs(process.argv.slice(2), ['mos-id', 'ncs-id',
	    'lower', 'upper', 'query', 'ncs-lower', 'ncs-upper']);
	const ports = {
		lower: Number(a.lower), upper: Number(a.upper), query: Number(a.query)
	};
	const conn = new MosConnection({
		mosID: a['mos-id'],
		acceptsConnections: true,
		profiles: { 0: true, 1: true, 2: true, 3: true, 4: true },
		ports,
		strict: false,
		debug: false
	});
	conn.on('error', (e) => process.stderr.write(`error: ${e}\n`));
	conn.on('warning', (w) => process.stderr.write(`warning: ${w}\n`));
	await conn.init();
	const dev = await conn.connect({
		primary: {
			id: a['ncs-id'],
			host: '127.0.0.1',
			ports: {
				lower: Number(a['ncs-lower']),
				upper: Number(a['ncs-upper']),
				query: Number(a['ncs-upper'])
			},
			dontUseQueryPort: true,
			timeout: 3000
		}
	});
	serve(dev);
	emit({ event: 'ready', ports });
	const stop = async () => {
		await conn.dispose();
		process.exit(0);
	};
	process.on('SIGTERM', stop);
	process.on('SIGINT', stop);
}

main().catch((e) => {
	emit({ event: 'done', ok: false, error: String(e && e.message || e) });
	process.exit(1);
});
