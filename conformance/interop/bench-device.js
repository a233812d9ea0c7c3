#!/usr/bin/env node
/*
 * bench-device.js: Sofie's @mos-connection/connector as a MOS device that
 * publishes mosObj messages, one outstanding at a time as the protocol
 * wants, to an NCS on 127.0.0.1 (the benchmark's C sink). It prints one JSON
 * line: {"rate": mosObj/s, "cpu_ms_per_msg": CPU of this process per
 * message, "count": N, "node": version}. Used by bench/bench_gateway.c to
 * put a JavaScript MOS device beside mosgw in the same run.
 *
 * Usage: node bench-device.js --lower P --upper P [--count N]
 *        [--mos-id bench.js] [--ncs-id NCSSINK] [--timeout S]
 */
'use strict';

const {
	MosConnection, getMosTypes, IMOSObjectType, IMOSObjectStatus,
	IMOSObjectAirStatus, IMOSObjectPathType
} = require('@mos-connection/connector');

const types = getMosTypes(false);

function args(argv) {
	const o = {};

	for (let i = 0; i + 1 < argv.length; i += 2)
		o[argv[i].replace(/^--/, '')] = argv[i + 1];
	if (!o.lower || !o.upper)
		throw new Error('usage: bench-device.js --lower P --upper P [--count N]');
	return o;
}

function sleep(ms) {
	return new Promise((resolve) => setTimeout(resolve, ms));
}

/* A clip like the one bench_gateway.c publishes through mosgw. */
function clip(i) {
	const now = types.mosTime.create(new Date());

	return {
		ID: types.mosString128.create(`JS-${i}`),
		Slug: types.mosString128.create('Hotel fire: reporter package, second edit'),
		MosAbstract: 'Hotel fire, package with interview',
		Group: 'News',
		Type: IMOSObjectType.VIDEO,
		TimeBase: 50,
		Revision: 1,
		Duration: 1500,
		Status: IMOSObjectStatus.UPDATED,
		AirStatus: IMOSObjectAirStatus.READY,
		Paths: [{
			Type: IMOSObjectPathType.PATH,
			Description: 'MXF XDCAM HD 50',
			Target: '\\\\media01\\clips\\M000123.mxf'
		}, {
			Type: IMOSObjectPathType.PROXY_PATH,
			Description: 'MP4 proxy',
			Target: 'http://media01/proxy/M000123.mp4'
		}],
		CreatedBy: types.mosString128.create('bench'),
		Created: now,
		ChangedBy: types.mosString128.create('bench'),
		Changed: now,
		Description: 'Fire at the hotel on the main square; interview with ' +
		    'the fire chief, shots of the evacuation.'
	};
}

async function main() {
	const a = args(process.argv.slice(2));
	const count = Number(a.count || 5000);
	const deadline = Date.now() + 1000 * Number(a.timeout || 30);
	const conn = new MosConnection({
		mosID: a['mos-id'] || 'bench.js',
		acceptsConnections: false,
		profiles: { 0: true, 1: true },
		strict: false,
		debug: false
	});

	conn.on('error', (e) => process.stderr.write(`error: ${e}\n`));
	await conn.init();
	const dev = await conn.connect({
		primary: {
			id: a['ncs-id'] || 'NCSSINK',
			host: '127.0.0.1',
			ports: { lower: Number(a.lower), upper: Number(a.upper), query: 0 },
			dontUseQueryPort: true,
			timeout: 5000
		}
	});
	while (!dev.getConnectionStatus().PrimaryConnected) {
		if (Date.now() > deadline)
			throw new Error('the sink did not answer heartbeats');
		await sleep(20);
	}
	/* Warm up the JIT, then measure. */
	for (let i = 0; i < 200; i++)
		await dev.sendMOSObject(clip(i));
	const cpu0 = process.cpuUsage();
	const t0 = process.hrtime.bigint();
	let n = 0;

	for (; n < count && Date.now() < deadline; n++)
		await dev.sendMOSObject(clip(n));
	const secs = Number(process.hrtime.bigint() - t0) / 1e9;
	const cpu = process.cpuUsage(cpu0);

	process.stdout.write(JSON.stringify({
		rate: n / secs,
		cpu_ms_per_msg: (cpu.user + cpu.system) / 1000 / n,
		count: n,
		node: process.version
	}) + '\n');
	await conn.dispose();
}

main().then(() => process.exit(0), (e) => {
	process.stdout.write(JSON.stringify({ error: String(e && e.message || e) }) + '\n');
	process.exit(1);
});
