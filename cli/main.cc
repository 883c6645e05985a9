#include "fmt/format.h"
int main(int argc, char** argv) { fmt::print("spreplay\n"); return 0; }
