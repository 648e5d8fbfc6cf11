#!/bin/sh
# A ptxas that never finishes, for the test of ugpu's time limit on it.
exec sleep 60
