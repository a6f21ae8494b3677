#!/usr/bin/env node
// The `tool-envelope` command of the tool-envelope-cli package: the library's CLI, with every driver it needs installed beside it.
import 'tool-envelope/cli';
