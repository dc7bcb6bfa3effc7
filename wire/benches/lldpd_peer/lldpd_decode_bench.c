/*
 * Decode rate of lldpd's own LLDP decoder (lldp_decode() from lldpd's daemon library) on one
 * frame, for comparison with Spinel's decoder on the same octets. Each iteration decodes into
 * lldpd's chassis/port structures and frees them again, as lldpd does for every frame it
 * receives before it looks the neighbour up.
 *
 * Built and run by compare.sh; usage: lldpd_decode_bench FRAME_FILE [ITERATIONS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lldpd.h"

static double
now_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int
main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s FRAME_FILE [ITERATIONS]\n", argv[0]);
		return 2;
	}
	long iterations = argc > 2 ? atol(argv[2]) : 5000000;
	FILE *f = fopen(argv[1], "rb");
	if (f == NULL) {
		perror(argv[1]);
		return 2;
	}
	char frame[9000];
	size_t len = fread(frame, 1, sizeof(frame), f);
	fclose(f);

	/* lldp_decode() only needs an interface name, an MTU and the counters. */
	struct lldpd_hardware hardware;
	memset(&hardware, 0, sizeof(hardware));
	hardware.h_mtu = 1500;
	strcpy(hardware.h_ifname, "bench0");

	/* Warm up and check that lldpd accepts the frame at all. */
	for (int i = 0; i < 10000; i++) {
		struct lldpd_chassis *chassis = NULL;
		struct lldpd_port *port = NULL;
		if (lldp_decode(NULL, frame, (int)len, &hardware, &chassis, &port) == -1) {
			fprintf(stderr, "lldpd rejects the frame\n");
			return 1;
		}
		lldpd_port_cleanup(port, 1);
		free(port);
		lldpd_chassis_cleanup(chassis, 1);
	}

	double best = 1e9;
	/* Five runs; report the best, like a minimum-of-samples benchmark. */
	for (int run = 0; run < 5; run++) {
		double start = now_seconds();
		for (long i = 0; i < iterations; i++) {
			struct lldpd_chassis *chassis = NULL;
			struct lldpd_port *port = NULL;
			lldp_decode(NULL, frame, (int)len, &hardware, &chassis, &port);
			lldpd_port_cleanup(port, 1);
			free(port);
			lldpd_chassis_cleanup(chassis, 1);
		}
		double ns = (now_seconds() - start) * 1e9 / (double)iterations;
		printf("lldpd lldp_decode run %d: %.1f ns/decode\n", run, ns);
		if (ns < best) best = ns;
	}
	printf("lldpd lldp_decode best: %.1f ns/decode = %.2f million decodes/s (%zu-octet frame)\n",
	    best, 1e3 / best, len);
	return 0;
}
