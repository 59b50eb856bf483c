;; The embedding worker's two inner loops in WebAssembly SIMD (embed/embed-kernels.ts runs them): the built-in
;; model's sum of token vectors and the SimHash of a vector. Both compute in float64 lanes exactly what their
;; JavaScript loops compute one number at a time (every product is exact in float64, every sum is rounded once per
;; step, in the same order), so vectors and signatures are bit-identical to the ones stored before. Every pointer is a
;; byte offset in the imported memory. Compiled into embed-kernels-wasm.ts by scripts/build-wasm.mjs
;; (npm run build:wasm); a tidy test checks the two agree.
(module
  (import "e" "m" (memory 1))

  ;; Token sum: for each of the `n` tokens listed at `toks` (an i32 row id, then its f32 scale), acc[j] += scale *
  ;; row[j] for the `dim` int8 components of the row (at `rows` + id * dim), each sum rounded to f32 as the
  ;; JavaScript loop's Float32Array store does; `acc` holds `dim` f32. `dim` is a multiple of 16. Per block of 16
  ;; components, four steps of four: f32(acc + s * x) in two float64 pairs each.
  (func (export "accumulate") (param $rows i32) (param $dim i32) (param $toks i32) (param $n i32) (param $acc i32)
    (local $t i32) (local $r i32) (local $a i32) (local $j i32)
    (local $s v128) (local $b v128) (local $w v128) (local $c v128)
    (block $done
      (loop $token
        (br_if $done (i32.ge_u (local.get $t) (local.get $n)))
        (local.set $r
          (i32.add (local.get $rows)
            (i32.mul (i32.load (i32.add (local.get $toks) (i32.shl (local.get $t) (i32.const 3)))) (local.get $dim))))
        (local.set $s
          (f64x2.splat (f64.promote_f32 (f32.load offset=4 (i32.add (local.get $toks) (i32.shl (local.get $t) (i32.const 3)))))))
        (local.set $a (local.get $acc))
        (local.set $j (i32.const 0))
        (block $row
          (loop $step
            (br_if $row (i32.ge_u (local.get $j) (local.get $dim)))
            (local.set $b (v128.load (i32.add (local.get $r) (local.get $j))))
            (local.set $w (i32x4.extend_low_i16x8_s (i16x8.extend_low_i8x16_s (local.get $b))))
            (local.set $c (v128.load offset=0 (local.get $a)))
            (v128.store offset=0 (local.get $a)
              (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23
                (f32x4.demote_f64x2_zero
                  (f64x2.add (f64x2.promote_low_f32x4 (local.get $c))
                    (f64x2.mul (f64x2.convert_low_i32x4_s (local.get $w)) (local.get $s))))
                (f32x4.demote_f64x2_zero
                  (f64x2.add (f64x2.promote_low_f32x4 (i8x16.shuffle 8 9 10 11 12 13 14 15 0 1 2 3 4 5 6 7 (local.get $c) (local.get $c)))
                    (f64x2.mul
                      (f64x2.convert_low_i32x4_s (i8x16.shuffle 8 9 10 11 12 13 14 15 0 1 2 3 4 5 6 7 (local.get $w) (local.get $w)))
                      (local.get $s))))))
            (local.set $w (i32x4.extend_high_i16x8_s (i16x8.extend_low_i8x16_s (local.get $b))))
            (local.set $c (v128.load offset=16 (local.get $a)))
            (v128.store offset=16 (local.get $a)
              (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23
                (f32x4.demote_f64x2_zero
                  (f64x2.add (f64x2.promote_low_f32x4 (local.get $c))
                    (f64x2.mul (f64x2.convert_low_i32x4_s (local.get $w)) (local.get $s))))
                (f32x4.demote_f64x2_zero
                  (f64x2.add (f64x2.promote_low_f32x4 (i8x16.shuffle 8 9 10 11 12 13 14 15 0 1 2 3 4 5 6 7 (local.get $c) (local.get $c)))
                    (f64x2.mul
                      (f64x2.convert_low_i32x4_s (i8x16.shuffle 8 9 10 11 12 13 14 15 0 1 2 3 4 5 6 7 (local.get $w) (local.get $w)))
                      (local.get $s))))))
            (local.set $w (i32x4.extend_low_i16x8_s (i16x8.extend_high_i8x16_s (local.get $b))))
            (local.set $c (v128.load offset=32 (local.get $a)))
            (v128.store offset=32 (local.get $a)
              (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23
                (f32x4.demote_f64x2_zero
                  (f64x2.add (f64x2.promote_low_f32x4 (local.get $c))
                    (f64x2.mul (f64x2.convert_low_i32x4_s (local.get $w)) (local.get $s))))
                (f32x4.demote_f64x2_zero
                  (f64x2.add (f64x2.promote_low_f32x4 (i8x16.shuffle 8 9 10 11 12 13 14 15 0 1 2 3 4 5 6 7 (local.get $c) (local.get $c)))
                    (f64x2.mul
                      (f64x2.convert_low_i32x4_s (i8x16.shuffle 8 9 10 11 12 13 14 15 0 1 2 3 4 5 6 7 (local.get $w) (local.get $w)))
                      (local.get $s))))))
            (local.set $w (i32x4.extend_high_i16x8_s (i16x8.extend_high_i8x16_s (local.get $b))))
            (local.set $c (v128.load offset=48 (local.get $a)))
            (v128.store offset=48 (local.get $a)
              (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23
                (f32x4.demote_f64x2_zero
                  (f64x2.add (f64x2.promote_low_f32x4 (local.get $c))
                    (f64x2.mul (f64x2.convert_low_i32x4_s (local.get $w)) (local.get $s))))
                (f32x4.demote_f64x2_zero
                  (f64x2.add (f64x2.promote_low_f32x4 (i8x16.shuffle 8 9 10 11 12 13 14 15 0 1 2 3 4 5 6 7 (local.get $c) (local.get $c)))
                    (f64x2.mul
                      (f64x2.convert_low_i32x4_s (i8x16.shuffle 8 9 10 11 12 13 14 15 0 1 2 3 4 5 6 7 (local.get $w) (local.get $w)))
                      (local.get $s))))))
            (local.set $a (i32.add (local.get $a) (i32.const 64)))
            (local.set $j (i32.add (local.get $j) (i32.const 16)))
            (br $step)))
        (local.set $t (i32.add (local.get $t) (i32.const 1)))
        (br $token))))

  ;; SimHash: the signs of the products of a vector (`dim` f64 at `vec`) with 256 planes, as 8 i32 words at `out`
  ;; (bit b of the signature: plane b's product >= 0). The planes are laid out by groups of 8 (embed-kernels.ts
  ;; planeLayout): group g holds, for each component i, planes 8g .. 8g + 7's component i as four f64 pairs (64
  ;; bytes); each plane's sum runs over i in order, in its own lane.
  (func (export "signature") (param $planes i32) (param $dim i32) (param $vec i32) (param $out i32)
    (local $g i32) (local $p i32) (local $v i32) (local $end i32) (local $bits i32) (local $o i32)
    (local $a0 v128) (local $a1 v128) (local $a2 v128) (local $a3 v128) (local $x v128)
    (local.set $p (local.get $planes))
    (v128.store (local.get $out) (v128.const i32x4 0 0 0 0))
    (v128.store offset=16 (local.get $out) (v128.const i32x4 0 0 0 0))
    (block $done
      (loop $group
        (br_if $done (i32.ge_u (local.get $g) (i32.const 32)))
        (local.set $a0 (v128.const i32x4 0 0 0 0))
        (local.set $a1 (v128.const i32x4 0 0 0 0))
        (local.set $a2 (v128.const i32x4 0 0 0 0))
        (local.set $a3 (v128.const i32x4 0 0 0 0))
        (local.set $v (local.get $vec))
        (local.set $end (i32.add (local.get $vec) (i32.shl (local.get $dim) (i32.const 3))))
        (block $row
          (loop $step
            (br_if $row (i32.ge_u (local.get $v) (local.get $end)))
            (local.set $x (v128.load64_splat (local.get $v)))
            (local.set $a0 (f64x2.add (local.get $a0) (f64x2.mul (v128.load offset=0 (local.get $p)) (local.get $x))))
            (local.set $a1 (f64x2.add (local.get $a1) (f64x2.mul (v128.load offset=16 (local.get $p)) (local.get $x))))
            (local.set $a2 (f64x2.add (local.get $a2) (f64x2.mul (v128.load offset=32 (local.get $p)) (local.get $x))))
            (local.set $a3 (f64x2.add (local.get $a3) (f64x2.mul (v128.load offset=48 (local.get $p)) (local.get $x))))
            (local.set $p (i32.add (local.get $p) (i32.const 64)))
            (local.set $v (i32.add (local.get $v) (i32.const 8)))
            (br $step)))
        (local.set $bits
          (i32.or
            (i32.or (i64x2.bitmask (f64x2.ge (local.get $a0) (v128.const i32x4 0 0 0 0)))
              (i32.shl (i64x2.bitmask (f64x2.ge (local.get $a1) (v128.const i32x4 0 0 0 0))) (i32.const 2)))
            (i32.or (i32.shl (i64x2.bitmask (f64x2.ge (local.get $a2) (v128.const i32x4 0 0 0 0))) (i32.const 4))
              (i32.shl (i64x2.bitmask (f64x2.ge (local.get $a3) (v128.const i32x4 0 0 0 0))) (i32.const 6)))))
        ;; group g is bits 8(g % 4) .. +7 of word g / 4
        (local.set $o (i32.add (local.get $out) (i32.shl (i32.shr_u (local.get $g) (i32.const 2)) (i32.const 2))))
        (i32.store (local.get $o)
          (i32.or (i32.load (local.get $o))
            (i32.shl (local.get $bits) (i32.shl (i32.and (local.get $g) (i32.const 3)) (i32.const 3)))))
        (local.set $g (i32.add (local.get $g) (i32.const 1)))
        (br $group)))))
