/*
** graph_seed.c: mt_graph_set_seed, the public way to restart the dropout
** RNG of a graph (graph.c seeds it once, from mt_graph_params.seed).
*/
#include "graph_impl.h"

void mt_graph_set_seed(mt_graph *g, uint64_t seed) { mt_rng_seed(graph_rng(g), seed); }
