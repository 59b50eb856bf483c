#!/usr/bin/env node
'use strict';
require('../dist/cairn.js').main(process.argv.slice(2));
