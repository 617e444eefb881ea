// Placeholder replaced by the reliability work; keeps FIELDRANK_BUILD_TESTS configurable.
#include <fieldrank/fieldrank.hpp>
int main() { return 0; }
