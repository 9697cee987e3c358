"""tinyc.codegen.opt.tc mirrors tinygrad.codegen.opt.tc: TensorCore and the tensor-core tables of each GPU family,
native (the tables are rows of data in csrc/codegen/opt/tc.c, kept in tinyc._C.tc)."""
from tinyc._C import TensorCore, tc as _tables

cuda_tc_opts = _tables.cuda_tc_opts
cuda_81616, cuda_81632_f8, cuda_8168_f16, cuda_8168_tf32 = _tables.cuda_81616, _tables.cuda_81632_f8, _tables.cuda_8168_f16, _tables.cuda_8168_tf32
cuda_sm75, cuda_sm80, cuda_sm89 = _tables.cuda_sm75, _tables.cuda_sm80, _tables.cuda_sm89
amd_rdna3, amd_rdna4 = _tables.amd_rdna3, _tables.amd_rdna4
amd_cdna_161616, amd_cdna_161632, amd_cdna_1616128 = _tables.amd_cdna_161616, _tables.amd_cdna_161632, _tables.amd_cdna_1616128
amd_cdna3, amd_cdna4 = _tables.amd_cdna3, _tables.amd_cdna4
metal, amx, intel = _tables.metal, _tables.amx, _tables.intel

__all__ = ["TensorCore", "cuda_tc_opts", "cuda_81616", "cuda_81632_f8", "cuda_8168_f16", "cuda_8168_tf32", "cuda_sm75", "cuda_sm80",
           "cuda_sm89", "amd_rdna3", "amd_rdna4", "amd_cdna_161616", "amd_cdna_161632", "amd_cdna_1616128", "amd_cdna3", "amd_cdna4",
           "metal", "amx", "intel"]
