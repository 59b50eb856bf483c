;; The vector arm's inner loops in WebAssembly, the dot products in SIMD (store/vector-kernels.ts runs them over the
;; index's shared memory). Every pointer is a byte offset in the imported memory. Compiled into vector-kernels-wasm.ts by
;; scripts/build-wasm.mjs (npm run build:wasm); a tidy test checks the two agree.
(module
  (import "e" "m" (memory 1 65536 shared))

  ;; Hamming distances: for each of the `n` slots listed (i32) at `adm`, the bits that differ between its 256-bit
  ;; signature (32 bytes at `sigBase` + slot * 32) and the query's (32 bytes at `qsig`), as u16 at `dist`; and each
  ;; distance counted in the histogram at `hist` (257 i32, added to: the caller zeroes it before a pass). Four 64-bit
  ;; words and i64.popcnt (one instruction on x86-64 and arm64) rather than i8x16.popcnt, which V8 emulates on x86
  ;; with table lookups, plus a horizontal sum of the lanes: 20% less time per slot (bench/README.md).
  (func (export "hamming") (param $sigBase i32) (param $adm i32) (param $n i32) (param $qsig i32) (param $dist i32) (param $hist i32)
    (local $i i32) (local $o i32) (local $d i32) (local $h i32) (local $q0 i64) (local $q1 i64) (local $q2 i64) (local $q3 i64)
    (local.set $q0 (i64.load (local.get $qsig)))
    (local.set $q1 (i64.load offset=8 (local.get $qsig)))
    (local.set $q2 (i64.load offset=16 (local.get $qsig)))
    (local.set $q3 (i64.load offset=24 (local.get $qsig)))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (local.set $o
          (i32.add (local.get $sigBase)
            (i32.shl (i32.load (i32.add (local.get $adm) (i32.shl (local.get $i) (i32.const 2)))) (i32.const 5))))
        (local.set $d
          (i32.wrap_i64
            (i64.add
              (i64.add
                (i64.popcnt (i64.xor (i64.load (local.get $o)) (local.get $q0)))
                (i64.popcnt (i64.xor (i64.load offset=8 (local.get $o)) (local.get $q1))))
              (i64.add
                (i64.popcnt (i64.xor (i64.load offset=16 (local.get $o)) (local.get $q2)))
                (i64.popcnt (i64.xor (i64.load offset=24 (local.get $o)) (local.get $q3)))))))
        (i32.store16 (i32.add (local.get $dist) (i32.shl (local.get $i) (i32.const 1))) (local.get $d))
        (local.set $h (i32.add (local.get $hist) (i32.shl (local.get $d) (i32.const 2))))
        (i32.store (local.get $h) (i32.add (i32.load (local.get $h)) (i32.const 1)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next))))

  ;; Hamming distances at or below a bound: as `hamming`, but only the slots whose distance is at most `bound` are
  ;; written, their index in the list (i32 at `pos`) and their distance (u16 at `dist`), in list order; returns how
  ;; many. A duplicate check keeps ~128 of a namespace's 100k slots, so the branch is almost never taken and the pass
  ;; writes nearly nothing (no distance per slot, no histogram).
  (func (export "hammingBelow") (param $sigBase i32) (param $adm i32) (param $n i32) (param $qsig i32) (param $bound i32)
    (param $pos i32) (param $dist i32) (result i32)
    (local $i i32) (local $o i32) (local $d i32) (local $c i32) (local $q0 i64) (local $q1 i64) (local $q2 i64) (local $q3 i64)
    (local.set $q0 (i64.load (local.get $qsig)))
    (local.set $q1 (i64.load offset=8 (local.get $qsig)))
    (local.set $q2 (i64.load offset=16 (local.get $qsig)))
    (local.set $q3 (i64.load offset=24 (local.get $qsig)))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (local.set $o
          (i32.add (local.get $sigBase)
            (i32.shl (i32.load (i32.add (local.get $adm) (i32.shl (local.get $i) (i32.const 2)))) (i32.const 5))))
        (local.set $d
          (i32.wrap_i64
            (i64.add
              (i64.add
                (i64.popcnt (i64.xor (i64.load (local.get $o)) (local.get $q0)))
                (i64.popcnt (i64.xor (i64.load offset=8 (local.get $o)) (local.get $q1))))
              (i64.add
                (i64.popcnt (i64.xor (i64.load offset=16 (local.get $o)) (local.get $q2)))
                (i64.popcnt (i64.xor (i64.load offset=24 (local.get $o)) (local.get $q3)))))))
        (if (i32.le_u (local.get $d) (local.get $bound))
          (then
            (i32.store (i32.add (local.get $pos) (i32.shl (local.get $c) (i32.const 2))) (local.get $i))
            (i32.store16 (i32.add (local.get $dist) (i32.shl (local.get $c) (i32.const 1))) (local.get $d))
            (local.set $c (i32.add (local.get $c) (i32.const 1)))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (local.get $c))

  ;; Dot products: for each of the `n` slots listed (i32) at `pool`, its int8 vector (`dim` bytes at `qBase` +
  ;; slot * dim; `dim` a multiple of 16) times the f32 query (`dim` floats at `vec`), summed in f32, as f32 at `out`.
  (func (export "dots") (param $qBase i32) (param $dim i32) (param $pool i32) (param $n i32) (param $vec i32) (param $out i32)
    (local $i i32) (local $j i32) (local $o i32) (local $v i32)
    (local $a0 v128) (local $a1 v128) (local $a2 v128) (local $a3 v128) (local $b v128) (local $h v128)
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (local.set $o
          (i32.add (local.get $qBase)
            (i32.mul (i32.load (i32.add (local.get $pool) (i32.shl (local.get $i) (i32.const 2)))) (local.get $dim))))
        (local.set $a0 (v128.const i32x4 0 0 0 0))
        (local.set $a1 (v128.const i32x4 0 0 0 0))
        (local.set $a2 (v128.const i32x4 0 0 0 0))
        (local.set $a3 (v128.const i32x4 0 0 0 0))
        (local.set $j (i32.const 0))
        (local.set $v (local.get $vec))
        (block $row
          (loop $step
            (br_if $row (i32.ge_u (local.get $j) (local.get $dim)))
            (local.set $b (v128.load (i32.add (local.get $o) (local.get $j))))
            (local.set $h (i16x8.extend_low_i8x16_s (local.get $b)))
            (local.set $a0 (f32x4.add (local.get $a0)
              (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $h))) (v128.load (local.get $v)))))
            (local.set $a1 (f32x4.add (local.get $a1)
              (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $h))) (v128.load offset=16 (local.get $v)))))
            (local.set $h (i16x8.extend_high_i8x16_s (local.get $b)))
            (local.set $a2 (f32x4.add (local.get $a2)
              (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $h))) (v128.load offset=32 (local.get $v)))))
            (local.set $a3 (f32x4.add (local.get $a3)
              (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $h))) (v128.load offset=48 (local.get $v)))))
            (local.set $j (i32.add (local.get $j) (i32.const 16)))
            (local.set $v (i32.add (local.get $v) (i32.const 64)))
            (br $step)))
        (local.set $a0 (f32x4.add (f32x4.add (local.get $a0) (local.get $a1)) (f32x4.add (local.get $a2) (local.get $a3))))
        (f32.store
          (i32.add (local.get $out) (i32.shl (local.get $i) (i32.const 2)))
          (f32.add
            (f32.add (f32x4.extract_lane 0 (local.get $a0)) (f32x4.extract_lane 1 (local.get $a0)))
            (f32.add (f32x4.extract_lane 2 (local.get $a0)) (f32x4.extract_lane 3 (local.get $a0)))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next))))

  ;; 4-bit dot products: as `dots`, over vectors of 4-bit components (the compact index, store/quantize.ts pack4):
  ;; each block of 32 components is 16 bytes, byte i holding component i in its low nibble and component 16 + i in
  ;; its high nibble, each stored as value + 8 (values -7..7). `dim` a multiple of 32; a slot is `dim` / 2 bytes.
  ;; The query comes as i16 (`dim` of them at `vec`: the float query times `scale`'s inverse, rounded), so a block is
  ;; four i16 dot products (i32x4.dot_i16x8_s) of the stored nibbles (0..15) with it, in integers; `bias` is 8 × the
  ;; sum of the query's i16 components (what the + 8 of each nibble added), and each result is
  ;; (sum - bias) × `scale` as f32: under half the float loop's instructions per block.
  (func (export "dots4") (param $qBase i32) (param $dim i32) (param $pool i32) (param $n i32) (param $vec i32) (param $out i32)
    (param $bias f64) (param $scale f64)
    (local $i i32) (local $j i32) (local $o i32) (local $v i32) (local $half i32)
    (local $a0 v128) (local $a1 v128) (local $b v128) (local $x v128)
    (local $q0 v128) (local $q1 v128) (local $q2 v128) (local $q3 v128)
    (local $o0 i32) (local $c0a v128) (local $c0b v128) (local $o1 i32) (local $c1a v128) (local $c1b v128) (local $o2 i32) (local $c2a v128) (local $c2b v128) (local $o3 i32) (local $c3a v128) (local $c3b v128)
    (local.set $half (i32.shr_u (local.get $dim) (i32.const 1)))
    ;; Four slots at a time: their vectors are scattered over the index, so each block's loads of four slots are in
    ;; flight together (a scan of a large store waits on memory more than it computes), and the query's block is
    ;; loaded once for the four.
    (block $done4
      (loop $next4
        (br_if $done4 (i32.gt_u (i32.add (local.get $i) (i32.const 4)) (local.get $n)))
        (local.set $o0
          (i32.add (local.get $qBase)
            (i32.mul (i32.load offset=0 (i32.add (local.get $pool) (i32.shl (local.get $i) (i32.const 2)))) (local.get $half))))
        (local.set $c0a (v128.const i32x4 0 0 0 0))
        (local.set $c0b (v128.const i32x4 0 0 0 0))
        (local.set $o1
          (i32.add (local.get $qBase)
            (i32.mul (i32.load offset=4 (i32.add (local.get $pool) (i32.shl (local.get $i) (i32.const 2)))) (local.get $half))))
        (local.set $c1a (v128.const i32x4 0 0 0 0))
        (local.set $c1b (v128.const i32x4 0 0 0 0))
        (local.set $o2
          (i32.add (local.get $qBase)
            (i32.mul (i32.load offset=8 (i32.add (local.get $pool) (i32.shl (local.get $i) (i32.const 2)))) (local.get $half))))
        (local.set $c2a (v128.const i32x4 0 0 0 0))
        (local.set $c2b (v128.const i32x4 0 0 0 0))
        (local.set $o3
          (i32.add (local.get $qBase)
            (i32.mul (i32.load offset=12 (i32.add (local.get $pool) (i32.shl (local.get $i) (i32.const 2)))) (local.get $half))))
        (local.set $c3a (v128.const i32x4 0 0 0 0))
        (local.set $c3b (v128.const i32x4 0 0 0 0))
        (local.set $j (i32.const 0))
        (local.set $v (local.get $vec))
        (block $row4
          (loop $step4
            (br_if $row4 (i32.ge_u (local.get $j) (local.get $half)))
            (local.set $q0 (v128.load (local.get $v)))
            (local.set $q1 (v128.load offset=16 (local.get $v)))
            (local.set $q2 (v128.load offset=32 (local.get $v)))
            (local.set $q3 (v128.load offset=48 (local.get $v)))
            (local.set $b (v128.load (i32.add (local.get $o0) (local.get $j))))
            (local.set $x (v128.and (local.get $b) (i8x16.splat (i32.const 15))))
            (local.set $c0a (i32x4.add (local.get $c0a) (i32x4.dot_i16x8_s (i16x8.extend_low_i8x16_u (local.get $x)) (local.get $q0))))
            (local.set $c0b (i32x4.add (local.get $c0b) (i32x4.dot_i16x8_s (i16x8.extend_high_i8x16_u (local.get $x)) (local.get $q1))))
            (local.set $x (i8x16.shr_u (local.get $b) (i32.const 4)))
            (local.set $c0a (i32x4.add (local.get $c0a) (i32x4.dot_i16x8_s (i16x8.extend_low_i8x16_u (local.get $x)) (local.get $q2))))
            (local.set $c0b (i32x4.add (local.get $c0b) (i32x4.dot_i16x8_s (i16x8.extend_high_i8x16_u (local.get $x)) (local.get $q3))))
            (local.set $b (v128.load (i32.add (local.get $o1) (local.get $j))))
            (local.set $x (v128.and (local.get $b) (i8x16.splat (i32.const 15))))
            (local.set $c1a (i32x4.add (local.get $c1a) (i32x4.dot_i16x8_s (i16x8.extend_low_i8x16_u (local.get $x)) (local.get $q0))))
            (local.set $c1b (i32x4.add (local.get $c1b) (i32x4.dot_i16x8_s (i16x8.extend_high_i8x16_u (local.get $x)) (local.get $q1))))
            (local.set $x (i8x16.shr_u (local.get $b) (i32.const 4)))
            (local.set $c1a (i32x4.add (local.get $c1a) (i32x4.dot_i16x8_s (i16x8.extend_low_i8x16_u (local.get $x)) (local.get $q2))))
            (local.set $c1b (i32x4.add (local.get $c1b) (i32x4.dot_i16x8_s (i16x8.extend_high_i8x16_u (local.get $x)) (local.get $q3))))
            (local.set $b (v128.load (i32.add (local.get $o2) (local.get $j))))
            (local.set $x (v128.and (local.get $b) (i8x16.splat (i32.const 15))))
            (local.set $c2a (i32x4.add (local.get $c2a) (i32x4.dot_i16x8_s (i16x8.extend_low_i8x16_u (local.get $x)) (local.get $q0))))
            (local.set $c2b (i32x4.add (local.get $c2b) (i32x4.dot_i16x8_s (i16x8.extend_high_i8x16_u (local.get $x)) (local.get $q1))))
            (local.set $x (i8x16.shr_u (local.get $b) (i32.const 4)))
            (local.set $c2a (i32x4.add (local.get $c2a) (i32x4.dot_i16x8_s (i16x8.extend_low_i8x16_u (local.get $x)) (local.get $q2))))
            (local.set $c2b (i32x4.add (local.get $c2b) (i32x4.dot_i16x8_s (i16x8.extend_high_i8x16_u (local.get $x)) (local.get $q3))))
            (local.set $b (v128.load (i32.add (local.get $o3) (local.get $j))))
            (local.set $x (v128.and (local.get $b) (i8x16.splat (i32.const 15))))
            (local.set $c3a (i32x4.add (local.get $c3a) (i32x4.dot_i16x8_s (i16x8.extend_low_i8x16_u (local.get $x)) (local.get $q0))))
            (local.set $c3b (i32x4.add (local.get $c3b) (i32x4.dot_i16x8_s (i16x8.extend_high_i8x16_u (local.get $x)) (local.get $q1))))
            (local.set $x (i8x16.shr_u (local.get $b) (i32.const 4)))
            (local.set $c3a (i32x4.add (local.get $c3a) (i32x4.dot_i16x8_s (i16x8.extend_low_i8x16_u (local.get $x)) (local.get $q2))))
            (local.set $c3b (i32x4.add (local.get $c3b) (i32x4.dot_i16x8_s (i16x8.extend_high_i8x16_u (local.get $x)) (local.get $q3))))
            (local.set $j (i32.add (local.get $j) (i32.const 16)))
            (local.set $v (i32.add (local.get $v) (i32.const 64)))
            (br $step4)))
        (f32.store
          (i32.add (local.get $out) (i32.shl (i32.add (local.get $i) (i32.const 0)) (i32.const 2)))
          (f32.demote_f64
            (f64.mul
              (f64.sub
                (f64.add
                  (f64.add (f64.add (f64.convert_i32_s (i32x4.extract_lane 0 (local.get $c0a))) (f64.convert_i32_s (i32x4.extract_lane 1 (local.get $c0a)))) (f64.add (f64.convert_i32_s (i32x4.extract_lane 2 (local.get $c0a))) (f64.convert_i32_s (i32x4.extract_lane 3 (local.get $c0a)))))
                  (f64.add (f64.add (f64.convert_i32_s (i32x4.extract_lane 0 (local.get $c0b))) (f64.convert_i32_s (i32x4.extract_lane 1 (local.get $c0b)))) (f64.add (f64.convert_i32_s (i32x4.extract_lane 2 (local.get $c0b))) (f64.convert_i32_s (i32x4.extract_lane 3 (local.get $c0b))))))
                (local.get $bias))
              (local.get $scale))))
        (f32.store
          (i32.add (local.get $out) (i32.shl (i32.add (local.get $i) (i32.const 1)) (i32.const 2)))
          (f32.demote_f64
            (f64.mul
              (f64.sub
                (f64.add
                  (f64.add (f64.add (f64.convert_i32_s (i32x4.extract_lane 0 (local.get $c1a))) (f64.convert_i32_s (i32x4.extract_lane 1 (local.get $c1a)))) (f64.add (f64.convert_i32_s (i32x4.extract_lane 2 (local.get $c1a))) (f64.convert_i32_s (i32x4.extract_lane 3 (local.get $c1a)))))
                  (f64.add (f64.add (f64.convert_i32_s (i32x4.extract_lane 0 (local.get $c1b))) (f64.convert_i32_s (i32x4.extract_lane 1 (local.get $c1b)))) (f64.add (f64.convert_i32_s (i32x4.extract_lane 2 (local.get $c1b))) (f64.convert_i32_s (i32x4.extract_lane 3 (local.get $c1b))))))
                (local.get $bias))
              (local.get $scale))))
        (f32.store
          (i32.add (local.get $out) (i32.shl (i32.add (local.get $i) (i32.const 2)) (i32.const 2)))
          (f32.demote_f64
            (f64.mul
              (f64.sub
                (f64.add
                  (f64.add (f64.add (f64.convert_i32_s (i32x4.extract_lane 0 (local.get $c2a))) (f64.convert_i32_s (i32x4.extract_lane 1 (local.get $c2a)))) (f64.add (f64.convert_i32_s (i32x4.extract_lane 2 (local.get $c2a))) (f64.convert_i32_s (i32x4.extract_lane 3 (local.get $c2a)))))
                  (f64.add (f64.add (f64.convert_i32_s (i32x4.extract_lane 0 (local.get $c2b))) (f64.convert_i32_s (i32x4.extract_lane 1 (local.get $c2b)))) (f64.add (f64.convert_i32_s (i32x4.extract_lane 2 (local.get $c2b))) (f64.convert_i32_s (i32x4.extract_lane 3 (local.get $c2b))))))
                (local.get $bias))
              (local.get $scale))))
        (f32.store
          (i32.add (local.get $out) (i32.shl (i32.add (local.get $i) (i32.const 3)) (i32.const 2)))
          (f32.demote_f64
            (f64.mul
              (f64.sub
                (f64.add
                  (f64.add (f64.add (f64.convert_i32_s (i32x4.extract_lane 0 (local.get $c3a))) (f64.convert_i32_s (i32x4.extract_lane 1 (local.get $c3a)))) (f64.add (f64.convert_i32_s (i32x4.extract_lane 2 (local.get $c3a))) (f64.convert_i32_s (i32x4.extract_lane 3 (local.get $c3a)))))
                  (f64.add (f64.add (f64.convert_i32_s (i32x4.extract_lane 0 (local.get $c3b))) (f64.convert_i32_s (i32x4.extract_lane 1 (local.get $c3b)))) (f64.add (f64.convert_i32_s (i32x4.extract_lane 2 (local.get $c3b))) (f64.convert_i32_s (i32x4.extract_lane 3 (local.get $c3b))))))
                (local.get $bias))
              (local.get $scale))))
        (local.set $i (i32.add (local.get $i) (i32.const 4)))
        (br $next4)))
    ;; The last slots one at a time.
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (local.set $o
          (i32.add (local.get $qBase)
            (i32.mul (i32.load (i32.add (local.get $pool) (i32.shl (local.get $i) (i32.const 2)))) (local.get $half))))
        (local.set $a0 (v128.const i32x4 0 0 0 0))
        (local.set $a1 (v128.const i32x4 0 0 0 0))
        (local.set $j (i32.const 0))
        (local.set $v (local.get $vec))
        (block $row
          (loop $step
            (br_if $row (i32.ge_u (local.get $j) (local.get $half)))
            (local.set $b (v128.load (i32.add (local.get $o) (local.get $j))))
            ;; low nibbles: components 0..15 of the block
            (local.set $x (v128.and (local.get $b) (i8x16.splat (i32.const 15))))
            (local.set $a0 (i32x4.add (local.get $a0)
              (i32x4.dot_i16x8_s (i16x8.extend_low_i8x16_u (local.get $x)) (v128.load (local.get $v)))))
            (local.set $a1 (i32x4.add (local.get $a1)
              (i32x4.dot_i16x8_s (i16x8.extend_high_i8x16_u (local.get $x)) (v128.load offset=16 (local.get $v)))))
            ;; high nibbles: components 16..31 of the block
            (local.set $x (i8x16.shr_u (local.get $b) (i32.const 4)))
            (local.set $a0 (i32x4.add (local.get $a0)
              (i32x4.dot_i16x8_s (i16x8.extend_low_i8x16_u (local.get $x)) (v128.load offset=32 (local.get $v)))))
            (local.set $a1 (i32x4.add (local.get $a1)
              (i32x4.dot_i16x8_s (i16x8.extend_high_i8x16_u (local.get $x)) (v128.load offset=48 (local.get $v)))))
            (local.set $j (i32.add (local.get $j) (i32.const 16)))
            (local.set $v (i32.add (local.get $v) (i32.const 64)))
            (br $step)))
        ;; lanes summed in f64 (a lane's i32 holds at most a quarter of the sum: no overflow up to KERNEL_MAX_DIM)
        (f32.store
          (i32.add (local.get $out) (i32.shl (local.get $i) (i32.const 2)))
          (f32.demote_f64
            (f64.mul
              (f64.sub
                (f64.add
                  (f64.add
                    (f64.add (f64.convert_i32_s (i32x4.extract_lane 0 (local.get $a0))) (f64.convert_i32_s (i32x4.extract_lane 1 (local.get $a0))))
                    (f64.add (f64.convert_i32_s (i32x4.extract_lane 2 (local.get $a0))) (f64.convert_i32_s (i32x4.extract_lane 3 (local.get $a0)))))
                  (f64.add
                    (f64.add (f64.convert_i32_s (i32x4.extract_lane 0 (local.get $a1))) (f64.convert_i32_s (i32x4.extract_lane 1 (local.get $a1))))
                    (f64.add (f64.convert_i32_s (i32x4.extract_lane 2 (local.get $a1))) (f64.convert_i32_s (i32x4.extract_lane 3 (local.get $a1))))))
                (local.get $bias))
              (local.get $scale))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next))))
)
